"""A plugin that fails while it is imported: diffc-opt must name it, without a traceback."""

raise RuntimeError("this plugin is broken on purpose")
