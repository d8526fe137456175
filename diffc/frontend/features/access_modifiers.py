"""Access modifiers: `public`, `internal` and `private` before a declaration (a global, a
function, a struct, an interface, an extension, a typealias or typedef, an enum, a `__generic`
declaration, a struct's or an interface's member, a `static const`), among its attributes or
its other modifiers, in any order.

Slang uses them to say what a module exports. A program here is compiled as one module whose
every declaration is visible to the rest of it, and nothing links against it by name, so the
parser accepts them where Slang does and drops them: what they would hide is never reached
from outside."""

from diffc.frontend.feature import Feature

FEATURE = Feature("access modifiers", modifiers=frozenset({"public", "internal", "private"}))
