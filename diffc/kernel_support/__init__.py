"""IR helpers that several kernel passes (and the differentiation core) share: the names and
roles of a kernel function's parameters, status reports to the host, the launch-time bounds
proofs, which memory only atomic adds touch. None of them is a pass; passes import them, and
they import no pass."""
