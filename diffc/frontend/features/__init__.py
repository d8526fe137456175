"""Language features, one module each, and the list the phases use (diffc/frontend/feature.py).

A feature module ends with `FEATURE = Feature("name", <hook>=<function>, ...)`; adding a feature
is its module, its tests, its import and its line in FEATURES below. FEATURES' order is the order
in which the phases ask the features' hooks (the first answer wins)."""

from diffc.frontend.feature import install
from diffc.frontend.features import access_modifiers
from diffc.frontend.features import arithmetic_methods
from diffc.frontend.features import atomic_intrinsics
from diffc.frontend.features import byte_address_buffers
from diffc.frontend.features import byte_pointers
from diffc.frontend.features import cbuffers
from diffc.frontend.features import coopvec
from diffc.frontend.features import cuda_builtins
from diffc.frontend.features import declared_differential
from diffc.frontend.features import dynamic
from diffc.frontend.features import dynamic_buffers
from diffc.frontend.features import extensions
from diffc.frontend.features import field_defaults
from diffc.frontend.features import func_extensions
from diffc.frontend.features import groupshared
from diffc.frontend.features import hex_floats
from diffc.frontend.features import lambdas
from diffc.frontend.features import matrices
from diffc.frontend.features import native_strings
from diffc.frontend.features import nested_structs
from diffc.frontend.features import operators
from diffc.frontend.features import optional
from diffc.frontend.features import pair_accessors
from diffc.frontend.features import ref_params
from diffc.frontend.features import properties
from diffc.frontend.features import real_casts
from diffc.frontend.features import subscripts
from diffc.frontend.features import target_switch
from diffc.frontend.features import textures

FEATURES = [
    optional.FEATURE,
    atomic_intrinsics.FEATURE,  # (before arithmetic_methods: `p[i].add(v)` of an Atomic<T>* adds atomically)
    arithmetic_methods.FEATURE,  # (before operators: an IArithmetic struct's operators are its methods)
    operators.FEATURE,
    matrices.FEATURE,
    properties.FEATURE,
    subscripts.FEATURE,
    textures.FEATURE,
    coopvec.FEATURE,
    dynamic.FEATURE,
    dynamic_buffers.FEATURE,
    groupshared.FEATURE,
    extensions.FEATURE,
    declared_differential.FEATURE,
    func_extensions.FEATURE,
    hex_floats.FEATURE,
    access_modifiers.FEATURE,
    cuda_builtins.FEATURE,
    pair_accessors.FEATURE,
    nested_structs.FEATURE,
    real_casts.FEATURE,
    field_defaults.FEATURE,
    ref_params.FEATURE,
    lambdas.FEATURE,
    target_switch.FEATURE,
    cbuffers.FEATURE,
    byte_pointers.FEATURE,
    byte_address_buffers.FEATURE,
    native_strings.FEATURE,
]

install(FEATURES)
