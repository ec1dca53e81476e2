"""Built-in workloads for ``relayviz demo``, the tests and the benchmarks: Relay models
(``relay_models``) and Relax models (``relax_models``). Each imports TVM only when a model
is made."""
