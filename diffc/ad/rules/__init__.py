"""One file per op kind whose derivative is more than partials: control flow, calls, the diff
dialect's own ops, effects. Each registers a diffc.ad.interface.DerivativeRule on import
(diffc.ad.registry imports them all)."""
