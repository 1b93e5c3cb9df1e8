"""The tensor class kernels see, shared by both APIs (each API subclasses it for its own
dtype and buffer objects and, in the legacy API, operators)."""

from __future__ import annotations

from typing import Any, Sequence

from . import dtypes, values
from .errors import NkiValueError, unsupported
from .view import View, as_int


class Tensor(View):
    """A view of a kernel tensor: an input, an HBM tensor or an on-chip tile."""

    __slots__ = ()

    @staticmethod
    def _api_dtype(name: str) -> Any:
        return name

    @staticmethod
    def _api_buffer(name: str) -> Any:
        return name

    @property
    def shape(self) -> tuple:
        return self.counts

    @property
    def dtype(self) -> Any:
        return self._api_dtype(self.st.dtype)

    @property
    def buffer(self) -> Any:
        return self._api_buffer(self.st.buffer)

    @property
    def ndim(self) -> int:
        return len(self.dims)

    @property
    def size(self) -> int:
        return self.nelem

    @property
    def itemsize(self) -> int:
        return dtypes.itemsize(self.st.dtype)

    @property
    def name(self) -> str:
        return self.st.name

    @property
    def strides(self) -> tuple:
        return tuple(s for s, _ in self.dims)

    @property
    def offset(self) -> int:
        st = self.st
        return self.off % st.T if st.on_chip and st.T else self.off

    def __getitem__(self, key: Any) -> "Tensor":
        return self.index(key)

    def __setitem__(self, key: Any, value: Any) -> None:
        values.assign(self.index(key), value)

    def reshape(self, *shape: Any, **kwargs: Any) -> "Tensor":
        """``t.reshape(a, b)``, ``t.reshape((a, b))`` or ``t.reshape(shape=(a, b))``."""
        if "shape" in kwargs:
            if shape:
                raise NkiValueError("reshape takes the shape once (positionally or as shape=)")
            shape = (kwargs.pop("shape"),)
        if kwargs:
            raise NkiValueError(f"reshape got unexpected arguments {sorted(kwargs)}")
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return View.reshape(self, shape)

    def get_pattern(self) -> list:
        return self.pattern()

    def is_contiguous(self) -> bool:
        dims = self.dims[max(self.pdim, 0) + (1 if self.st.on_chip else 0):]
        want = 1
        for s, c in reversed(dims):
            if c != 1 and s != want:
                return False
            want *= c
        return True

    def is_indirect(self) -> bool:
        return False

    def view(self, dtype: Any) -> "Tensor":
        if dtypes.name_of(dtype) == self.st.dtype:
            return self
        raise unsupported("reinterpreting a tensor as another dtype (.view)")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.st.name} {self.st.buffer} {self.st.dtype} {list(self.counts)}>"

    # Views on one dimension (both APIs spell some of these).

    def slice(self, dim: int, start: int, end: int, step: int = 1) -> "Tensor":
        key = [slice(None)] * len(self.dims)
        key[as_int(dim, "dim")] = slice(start, end, step)
        return self.index(tuple(key))

    def select(self, dim: int, index: Any) -> "Tensor":
        key = [slice(None)] * len(self.dims)
        key[as_int(dim, "dim")] = index
        return self.index(tuple(key))

    def broadcast(self, dim: int, size: int) -> "Tensor":
        d = as_int(dim, "dim")
        s, c = self.dims[d]
        if c != 1:
            raise NkiValueError(f"broadcast: dimension {d} has size {c}, not 1")
        if d == self.pdim and self.st.on_chip:
            raise NkiValueError("an on-chip tensor cannot be broadcast along its partition dimension")
        return self.with_dim(d, [(0, as_int(size, "size"))])

    def expand_dim(self, dim: int) -> "Tensor":
        d = as_int(dim, "dim")
        if self.st.on_chip and d <= self.pdim:
            raise NkiValueError("expand_dim cannot insert before the partition dimension")
        return self.with_dim(d, [(0, 1)], removed=0)

    def squeeze_dim(self, dim: int) -> "Tensor":
        d = as_int(dim, "dim")
        if self.dims[d][1] != 1:
            raise NkiValueError(f"squeeze_dim: dimension {d} has size {self.dims[d][1]}, not 1")
        if self.st.on_chip and d == self.pdim:
            raise NkiValueError("squeeze_dim cannot remove the partition dimension")
        return self.with_dim(d, [])

    def reshape_dim(self, dim: int, shape: Sequence[int]) -> "Tensor":
        d = as_int(dim, "dim")
        s, c = self.dims[d]
        shape = [as_int(x, "size") for x in shape]
        if shape.count(-1) == 1:
            known = 1
            for x in shape:
                if x != -1:
                    known *= x
            shape[shape.index(-1)] = c // known
        prod = 1
        for x in shape:
            prod *= x
        if prod != c:
            raise NkiValueError(f"reshape_dim: {shape} does not hold the {c} elements of dimension {d}")
        new = []
        acc = s
        for x in reversed(shape):
            new.append((acc, x))
            acc *= x
        return self.with_dim(d, list(reversed(new)))

    def flatten_dims(self, start_dim: int, end_dim: int) -> "Tensor":
        a, b = as_int(start_dim, "start_dim"), as_int(end_dim, "end_dim")
        group = self.dims[a:b + 1]
        n = 1
        for k in range(len(group) - 1):
            if group[k][1] != 1 and group[k][0] != group[k + 1][0] * group[k + 1][1]:
                raise NkiValueError(f"flatten_dims: dimensions {a}..{b} are not contiguous")
        for _, c in group:
            n *= c
        return self.with_dim(a, [(group[-1][0], n)], removed=b - a + 1)
