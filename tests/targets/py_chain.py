"""py_chain: the stand-in libcuda (tests/fakecuda) called through ctypes from a known Python call
chain, for the Python stack test (tests/engine/check_py_stacks.py). The lines marked "# @" are
the ones the test expects in the trace.

  py_chain.py LIBCUDA N   f1 -> Chain.f2 -> f3, which calls cuMemAlloc_v2 then
                          cuDriverGetVersion, N times on the main thread, then N times on a
                          second thread (target -> f1 -> ...)

ctypes.CDLL releases the GIL around each call, as PyTorch does around its ops. Prints
"calls ALLOC VERSION" and "checksum 0x..." of what the driver returned."""
import ctypes
import sys
import threading

cuda = ctypes.CDLL(sys.argv[1])
N = int(sys.argv[2])
totals = {"alloc": 0, "version": 0, "sum": 0}
ctx = ctypes.c_void_p()


def check(rc):
    if rc != 0:
        print(f"driver call failed: {rc}")
        sys.exit(3)


def f3(i):
    p = ctypes.c_uint64()
    check(cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(64 + (i & 7))))  # @f3
    v = ctypes.c_int()
    check(cuda.cuDriverGetVersion(ctypes.byref(v)))
    totals["alloc"] += 1
    totals["version"] += 1
    totals["sum"] = (totals["sum"] * 31 + p.value + v.value) & 0xFFFFFFFFFFFFFFFF


class Chain:
    @staticmethod
    def f2(i):
        f3(i)  # @f2


def f1(i):
    Chain.f2(i)  # @f1


def target():
    check(cuda.cuCtxSetCurrent(ctx))  # a context is current per thread
    for i in range(N):
        f1(i)  # @thread


def main():
    check(cuda.cuInit(0))
    dev = ctypes.c_int()
    check(cuda.cuDeviceGet(ctypes.byref(dev), 0))
    check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev))
    check(cuda.cuCtxSetCurrent(ctx))
    for i in range(N):
        f1(i)  # @main
    t = threading.Thread(target=target)
    t.start()
    t.join()
    print(f"calls {totals['alloc']} {totals['version']}")
    print(f"checksum {totals['sum']:#x}")


main()  # @module
