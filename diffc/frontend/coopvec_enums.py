"""The enums of Slang's CoopVec operations (features/coopvec.py), declared for a program that
names them: the CoopVec feature's prelude."""

from __future__ import annotations

from diffc.frontend.feature import Prelude

# The enums Slang's CoopVec operations take, declared for a program that names them (the values
# are diffc's own; Slang code only names the cases)
COMPONENT_TYPES = ("SignedInt8", "SignedInt16", "SignedInt32", "SignedInt64", "UnsignedInt8", "UnsignedInt16",
                   "UnsignedInt32", "UnsignedInt64", "Float16", "Float32", "Float64", "SignedInt8Packed",
                   "UnsignedInt8Packed", "FloatE4M3", "FloatE5M2", "BFloat16")
LAYOUTS = ("RowMajor", "ColumnMajor", "InferencingOptimal", "TrainingOptimal")
PRELUDE = Prelude("<diffc CoopVec enums>",
                  f"enum class CoopVecComponentType {{ {', '.join(COMPONENT_TYPES)} }};\n"
                  f"enum class CoopVecMatrixLayout {{ {', '.join(LAYOUTS)} }};\n",
                  frozenset({"CoopVecComponentType", "CoopVecMatrixLayout"}))
# an interpretation -> the buffer element it reads
INTERPRETED = {"Float16": "half", "Float32": "float", "Float64": "double"}
