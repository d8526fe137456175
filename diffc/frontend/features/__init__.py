"""Language features, one module each, and the list the phases use (diffc/frontend/feature.py).

A feature module ends with `FEATURE = Feature("name", <hook>=<function>, ...)`; adding a feature
is its module, its tests and its line below. The order is the order in which the phases ask the
features' hooks (the first answer wins)."""

from diffc.frontend.feature import install
from diffc.frontend.features import (
    coopvec, declared_differential, dynamic, dynamic_buffers, extensions, func_extensions, groupshared, matrices,
    operators, optional, properties, subscripts, textures,
)

FEATURES = [
    optional.FEATURE,
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
]

install(FEATURES)
