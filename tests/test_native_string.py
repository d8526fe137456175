"""A `NativeString` parameter (a string passed to a function for printf) is a located E0008."""

from slang_helpers import expect_error


def test_a_native_string_parameter_is_located():
    expect_error("float tag(NativeString s, float x) { return x; }", "E0008", 1, 11, "NativeString")
