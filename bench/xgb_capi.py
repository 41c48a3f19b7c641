"""Minimal ctypes binding of XGBoost's C API (training, saving, pred_contribs, pred_interactions),
so the benchmark can use Debian's libxgboost on a machine without the Python
package. Only the calls the benchmark needs."""
import ctypes
import os

import numpy as np

_u64 = ctypes.c_uint64


class XGBoostLib:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.lib.XGBGetLastError.restype = ctypes.c_char_p
        major, minor, patch = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        self.lib.XGBoostVersion(ctypes.byref(major), ctypes.byref(minor), ctypes.byref(patch))
        self.version = f"{major.value}.{minor.value}.{patch.value}"

    def check(self, rc):
        if rc != 0:
            raise RuntimeError(self.lib.XGBGetLastError().decode())

    def dmatrix(self, X, y=None):
        X = np.ascontiguousarray(X, dtype=np.float32)
        h = ctypes.c_void_p()
        self.check(self.lib.XGDMatrixCreateFromMat(
            X.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), _u64(X.shape[0]), _u64(X.shape[1]),
            ctypes.c_float(np.nan), ctypes.byref(h)))
        if y is not None:
            y = np.ascontiguousarray(y, dtype=np.float32)
            self.check(self.lib.XGDMatrixSetFloatInfo(
                h, b"label", y.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), _u64(len(y))))
        return h

    def free_dmatrix(self, h):
        self.lib.XGDMatrixFree(h)

    def train(self, params, dtrain, rounds):
        b = ctypes.c_void_p()
        arr = (ctypes.c_void_p * 1)(dtrain)
        self.check(self.lib.XGBoosterCreate(arr, _u64(1), ctypes.byref(b)))
        for k, v in params.items():
            self.check(self.lib.XGBoosterSetParam(b, str(k).encode(), str(v).encode()))
        for i in range(rounds):
            self.check(self.lib.XGBoosterUpdateOneIter(b, ctypes.c_int(i), dtrain))
        return b

    def load(self, path):
        b = ctypes.c_void_p()
        self.check(self.lib.XGBoosterCreate(None, _u64(0), ctypes.byref(b)))
        self.check(self.lib.XGBoosterLoadModel(b, path.encode()))
        return b

    def set_param(self, booster, name, value):
        self.check(self.lib.XGBoosterSetParam(booster, name.encode(), str(value).encode()))

    def save(self, booster, path):
        self.check(self.lib.XGBoosterSaveModel(booster, path.encode()))

    def pred_contribs(self, booster, dmat, option_mask=4):
        n = _u64()
        out = ctypes.POINTER(ctypes.c_float)()
        self.check(self.lib.XGBoosterPredict(booster, dmat, ctypes.c_int(option_mask), ctypes.c_uint(0),
                                             ctypes.c_int(0), ctypes.byref(n), ctypes.byref(out)))
        return np.ctypeslib.as_array(out, shape=(n.value,)).copy()

    def pred_interactions(self, booster, dmat):
        return self.pred_contribs(booster, dmat, option_mask=16)

    def free_booster(self, b):
        self.lib.XGBoosterFree(b)


def open_library(libdir):
    """Load libdmlc then libxgboost from libdir (decompressed there if needed), or
    the library that libdir names (a wheel's xgboost/lib/libxgboost.so)."""
    if libdir.endswith(".so"):
        return XGBoostLib(libdir)
    for name in ("libdmlc.so.0", "libxgboost.so.0"):
        path = os.path.join(libdir, name)
        if not os.path.exists(path):
            import lzma
            with lzma.open(path + ".xz") as src, open(path, "wb") as dst:
                dst.write(src.read())
        if name.startswith("libdmlc"):
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)  # found by soname when libxgboost loads
    return XGBoostLib(os.path.join(libdir, "libxgboost.so.0"))
