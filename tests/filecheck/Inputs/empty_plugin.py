"""A plugin file that defines no pass at all."""

HELLO = "no passes here"
