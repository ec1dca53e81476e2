# Every Relax node kind TVM 0.2x has, in one module (TVMScript of apache-tvm 0.27).
# Imported by tests/test_serialize_relax.py on TVM 0.2x (TVMScript reads this file).
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tirx as T


@I.ir_module
class Module:
    @T.prim_func(s_tir=True)
    def add_one(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float32")
        B = T.match_buffer(b, (n,), "float32")
        for i in range(n):
            with T.sblock("add_one"):
                vi = T.axis.spatial(n, i)
                B[vi] = A[vi] + T.float32(1)

    @R.function(pure=False)
    def main(x: R.Tensor(("n",), "float32"), flag: R.Tensor((), "bool")) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        with R.dataflow():
            y = R.call_tir(Module.add_one, (x,), out_ty=R.Tensor((n,), "float32"))
            z = R.add(y, R.const([1.0], "float32"))
            t = (y, z)
            w = t[1]
            R.output(w)
        if flag:
            r = R.multiply(w, w)
        else:
            r = R.nn.relu(w)
        s = R.shape([n, 2])
        m = R.match_cast(r, R.Tensor((n,), "float32"))
        p = R.call_packed("my_func", m, R.prim_value(3), R.str("hi"), R.dtype("float32"), ty_args=[R.Object])
        return m
