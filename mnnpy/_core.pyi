"""
Type stubs of mnnpy's C++ core (``mnnpy._core``): the lazy expression graph's ``Var``, the
executor and the kernels' entry points. Generated from the built module with pybind11-stubgen
(after ``import mnnpy.numpy``, which adds NumPy's array methods to ``Var``) and checked by
tests/test_typing.py: every public name of the module is here. The ``Var`` members mnnpy adds
in Python (mnnpy/expr.py, mnnpy/_var_members.py, mnnpy/numpy/_ndarray.py) are included.
"""
from __future__ import annotations
# numpy imported under another name: Var has a method called numpy.
import collections.abc
import numpy as _numpy
import numpy.typing as _npt
import typing
__all__: list[str] = ['CHANNEL_BLOCK', 'PlannedGraph', 'Var', 'backend_channel_block', 'backend_description', 'bf16_choose_path', 'bf16_hardware_paths', 'bf16_pack_b', 'bf16_path', 'bf16_round', 'binary', 'binary_ops', 'borrow', 'broadcast_to', 'cast', 'clear_plan_cache', 'compiled_simd_targets', 'compute', 'concat', 'const', 'convert', 'cv_approx_poly_dp', 'cv_contour_moments', 'cv_convex_hull', 'cv_draw_circle', 'cv_draw_ellipse', 'cv_draw_ellipse_box', 'cv_draw_line', 'cv_draw_polylines', 'cv_draw_rectangle', 'cv_ellipse_to_poly', 'cv_fill_convex_poly', 'cv_fill_poly', 'cv_find_contours', 'cv_image_encode', 'cv_image_moments', 'cv_image_probe', 'cv_is_contour_convex', 'cv_mask_bounding_rect', 'cv_min_area_rect', 'cv_point_polygon_test', 'enable_test_backend', 'evaluate', 'evaluate_as_constants', 'executor_stats', 'expand_dims', 'force_portable_simd', 'gather', 'gather_nd', 'gemm_bf16', 'gemm_info', 'get_backend', 'get_block_sparse', 'get_num_threads', 'get_precision', 'grad', 'graph_format_version', 'has_grad_rule', 'index', 'index_assign', 'int8_gemm_info', 'kv_cache_bytes', 'kv_cache_create', 'kv_cache_release', 'kv_cache_reserve', 'last_profile', 'load_graph', 'matmul', 'memory_limit_bytes', 'non_max_suppression', 'op', 'pad', 'placeholder', 'promote_types', 'read_onnx', 'rebind', 'reduce', 'registered_ops', 'release_free_memory', 'reshape', 'save_graph', 'scalar', 'set_backend', 'set_block_sparse', 'set_executor_option', 'set_int8_amx', 'set_num_threads', 'set_precision', 'set_simd_target', 'set_thread_backend', 'set_thread_precision', 'share_value', 'simd_target', 'slice', 'split', 'split_at', 'split_sections', 'squeeze', 'stack', 'strided_slice', 'take_now', 'tile', 'transpose', 'unary', 'unary_ops', 'unique_flat', 'unique_rows', 'usable_backends', 'usable_simd_targets', 'where', 'with_format']
class Var:
    __array_priority__: typing.ClassVar[int] = 1000
    __array_ufunc__ = None
    __hash__: typing.ClassVar[None] = None  # type: ignore[assignment]
    name: str
    def __abs__(self) -> Var:
        ...
    def __add__(self, arg0: typing.Any) -> Var:
        ...
    def __and__(self, arg0: typing.Any) -> Var:
        ...
    def __array__(self, dtype: typing.Any = None, copy: typing.Any = None) -> typing.Any:
        ...
    def __array_namespace__(self, *, api_version = None):
        ...
    def __bool__(self) -> bool:
        ...
    def __copy__(self, order = 'C'):
        ...
    def __deepcopy__(self, memo):
        ...
    def __divmod__(self, other):
        ...
    def __dlpack__(self, *, stream = None, max_version = None, dl_device = None, copy = None):
        ...
    def __dlpack_device__(self):
        ...
    def __eq__(self, arg0: typing.Any) -> Var:  # type: ignore[override]
        ...
    def __float__(self) -> float:
        ...
    def __floordiv__(self, arg0: typing.Any) -> Var:
        ...
    def __ge__(self, arg0: typing.Any) -> Var:
        ...
    def __getitem__(self, index: typing.Any) -> Var:
        """
        NumPy indexing; returns a new Var.
        """
    def __gt__(self, arg0: typing.Any) -> Var:
        ...
    def __index__(self) -> int:
        ...
    def __int__(self) -> int:
        ...
    def __invert__(self) -> Var:
        ...
    def __iter__(self) -> collections.abc.Iterator[Var]:
        ...
    def __le__(self, arg0: typing.Any) -> Var:
        ...
    def __len__(self) -> int:
        ...
    def __lshift__(self, arg0: typing.Any) -> Var:
        ...
    def __lt__(self, arg0: typing.Any) -> Var:
        ...
    def __matmul__(self, other: typing.Any) -> Var:
        ...
    def __mod__(self, arg0: typing.Any) -> Var:
        ...
    def __mul__(self, arg0: typing.Any) -> Var:
        ...
    def __ne__(self, arg0: typing.Any) -> Var:  # type: ignore[override]
        ...
    def __neg__(self) -> Var:
        ...
    def __or__(self, arg0: typing.Any) -> Var:
        ...
    def __pos__(self) -> Var:
        ...
    def __pow__(self, arg0: typing.Any) -> Var:
        ...
    def __radd__(self, arg0: typing.Any) -> Var:
        ...
    def __rand__(self, arg0: typing.Any) -> Var:
        ...
    def __rdivmod__(self, other):
        ...
    def __reduce_ex__(self, protocol):
        """
        Pickles the value (a placeholder without one cannot be pickled).
        """
    def __repr__(self) -> str:
        ...
    def __rfloordiv__(self, arg0: typing.Any) -> Var:
        ...
    def __rlshift__(self, arg0: typing.Any) -> Var:
        ...
    def __rmatmul__(self, other: typing.Any) -> Var:
        ...
    def __rmod__(self, arg0: typing.Any) -> Var:
        ...
    def __rmul__(self, arg0: typing.Any) -> Var:
        ...
    def __ror__(self, arg0: typing.Any) -> Var:
        ...
    def __round__(self, ndigits = None):
        ...
    def __rpow__(self, arg0: typing.Any) -> Var:
        ...
    def __rrshift__(self, arg0: typing.Any) -> Var:
        ...
    def __rshift__(self, arg0: typing.Any) -> Var:
        ...
    def __rsub__(self, arg0: typing.Any) -> Var:
        ...
    def __rtruediv__(self, arg0: typing.Any) -> Var:
        ...
    def __rxor__(self, arg0: typing.Any) -> Var:
        ...
    def __setitem__(self, index: typing.Any, value: typing.Any) -> None:
        """
        x[index] = value: rebinds x to a new node holding the updated array; Vars taken from x before keep their values (writes never go through views).
        """
    def __str__(self) -> str:
        ...
    def __sub__(self, arg0: typing.Any) -> Var:
        ...
    def __truediv__(self, arg0: typing.Any) -> Var:
        ...
    def __xor__(self, arg0: typing.Any) -> Var:
        ...
    def _repr_html_(self) -> str:
        ...
    def all(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.all(self, ...)``.
        """
    def any(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.any(self, ...)``.
        """
    def argmax(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.argmax(self, ...)``.
        """
    def argmin(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.argmin(self, ...)``.
        """
    def argpartition(self, kth: typing.Any, axis: int | None = -1, kind: str = 'introselect', order: typing.Any = None) -> Var:
        """
        ``mnnpy.numpy.argpartition(self, ...)``.
        """
    def argsort(self, axis = -1, kind = None, order = None, *, stable = None):
        ...
    def astype(self, dtype: typing.Any, order: str = 'K', casting: str = 'unsafe', subok: bool = True, copy: bool = True) -> Var:
        ...
    def choose(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.choose(self, ...)``.
        """
    def clip(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.clip(self, ...)``.
        """
    def compress(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.compress(self, ...)``.
        """
    def conj(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.conj(self, ...)``.
        """
    def conjugate(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.conjugate(self, ...)``.
        """
    def copy(self, order: str = 'C') -> Var:
        ...
    def copy_from(self, src: typing.Any) -> None:
        """
        Makes the Var a placeholder holding ``src``'s value (and shape and dtype).
        """
    def cumprod(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.cumprod(self, ...)``.
        """
    def cumsum(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.cumsum(self, ...)``.
        """
    def diagonal(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.diagonal(self, ...)``.
        """
    def dot(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.dot(self, ...)``.
        """
    def fill(self, value):
        """
        Sets every element to ``value`` (the Var now refers to the filled array).
        """
    def fix_as_const(self) -> None:
        ...
    def fix_as_placeholder(self) -> None:
        """
        Makes the Var a placeholder holding its current value, which ``write`` can then change.
        """
    def fix_as_trainable(self) -> None:
        """
        Makes the Var a trainable parameter: a floating-point placeholder holding its current
            value (what ``nn.Parameter`` makes), which a Module attribute or an optimizer trains.
        """
    def flatten(self, order: str = 'C') -> Var:
        ...
    def item(self) -> typing.Any:
        ...
    def max(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.max(self, ...)``.
        """
    def mean(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.mean(self, ...)``.
        """
    def min(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.min(self, ...)``.
        """
    def nonzero(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.nonzero(self, ...)``.
        """
    def numpy(self) -> _numpy.ndarray:
        """
        Evaluate and return the value as a read-only NumPy array.
        """
    def prod(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.prod(self, ...)``.
        """
    def ptp(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.ptp(self, ...)``.
        """
    def ravel(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.ravel(self, ...)``.
        """
    def read(self) -> _numpy.ndarray:
        """
        Evaluate and return the value as a read-only NumPy array.
        """
    def read_as_tuple(self) -> tuple[typing.Any, ...]:
        """
        The values, flattened, as a tuple of Python numbers (MNN's ``Var.read_as_tuple``).
        """
    def reorder(self, data_format: typing.Any) -> None:
        """
        Gives a placeholder a new data format; its value is dropped (write a new one).
        """
    def repeat(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.repeat(self, ...)``.
        """
    def replace(self, src: typing.Any) -> None:
        """
        Makes the Var refer to ``src``'s node (arrays become constants).
        """
    def reshape(self, *shape: typing.Any) -> Var:
        """
        ``x.reshape(2, 3)`` or ``x.reshape((2, 3))``.
        """
    def resize(self, shape: typing.Any) -> None:
        """
        Gives a placeholder a new shape; its value is dropped (write a new one).
        """
    def round(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.round(self, ...)``.
        """
    def searchsorted(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.searchsorted(self, ...)``.
        """
    def set_inputs(self, inputs: collections.abc.Sequence[typing.Any]) -> None:
        """
        Makes the Var the same op with the same attributes applied to ``inputs``.
        """
    def set_order(self, data_format: typing.Any) -> None:
        """
        Labels the Var's value with a data format, without moving it (``expr.convert`` moves it).
        """
    def sort(self, axis = -1, kind = None, order = None, *, stable = None):
        """
        Sorts in place: the Var now refers to the sorted array (NumPy's ``a.sort()``).
        """
    def squeeze(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.squeeze(self, ...)``.
        """
    def std(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.std(self, ...)``.
        """
    def sum(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.sum(self, ...)``.
        """
    def swapaxes(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.swapaxes(self, ...)``.
        """
    def sync(self) -> None:
        """
        Computes the value now (MNN waits for a device here).
        """
    def take(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.take(self, ...)``.
        """
    def to_device(self, device, *, stream = None):
        ...
    def tobytes(self, order: str = 'C') -> bytes:
        ...
    def tolist(self) -> typing.Any:
        ...
    def trace(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.trace(self, ...)``.
        """
    def transpose(self, *axes: typing.Any) -> Var:
        """
        ``x.transpose()``, ``x.transpose(1, 0)`` or ``x.transpose((1, 0))``.
        """
    def var(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        """
        ``mnnpy.numpy.var(self, ...)``.
        """
    def write(self, value: typing.Any) -> None:
        ...
    @property
    def T(self) -> Var:
        ...
    @property
    def attrs(self) -> dict:
        ...
    @property
    def data_format(self) -> str:
        ...
    @property
    def device(self):
        ...
    @property
    def dtype(self) -> _numpy.dtype[typing.Any]:
        ...
    @property
    def flat(self) -> collections.abc.Iterator[typing.Any]:
        """
        Iteration over the computed elements of a Var in C order (``Var.flat``).
        """
    @property
    def imag(self) -> Var:
        ...
    @property
    def inputs(self) -> list[Var]:
        ...
    @property
    def is_const(self) -> bool:
        ...
    @property
    def is_evaluated(self) -> bool:
        ...
    @property
    def is_placeholder(self) -> bool:
        ...
    @property
    def itemsize(self) -> int:
        ...
    @property
    def mT(self) -> Var:
        ...
    @property
    def nbytes(self) -> int:
        ...
    @property
    def ndim(self) -> int:
        ...
    @property
    def node_id(self) -> int:
        """
        The number of the node that computes this Var, unique in the process.
        """
    @property
    def op_type(self) -> str:
        ...
    @property
    def output_index(self) -> int:
        ...
    @property
    def ptr(self) -> typing.Any:
        """
        ``Var.ptr`` as in MNN: a PyCapsule with the address of the Var's computed values (in
            C order), valid while the Var lives.
        """
    @property
    def reads_placeholder(self) -> bool:
        """
        Whether the value depends on a placeholder (so it changes when the placeholder is written).
        """
    @property
    def real(self) -> Var:
        ...
    @property
    def shape(self) -> tuple[int, ...]:
        ...
    @property
    def size(self) -> int:
        ...
    @property
    def valid(self) -> bool:
        ...
class PlannedGraph:
    """
    The graph behind some Vars, folded and planned once. run(values) computes them again from values for the placeholders listed in `inputs` (in that order), writing nothing shared, so threads may run one plan at once; run() reads every placeholder's current value. Results are constant Vars.
    """
    def __init__(self, targets: collections.abc.Sequence[Var], inputs: collections.abc.Sequence[Var] = []) -> None:
        ...
    def run(self, values: collections.abc.Sequence | None = None) -> list[Var]:
        ...
    @property
    def inputs(self) -> list[Var]:
        ...
def backend_channel_block(name: str) -> int:
    """
    The channel block the convolution layouts of backend `name` (one of usable_backends()) prefer; graphs use the blocked layout (block CHANNEL_BLOCK) where it is that.
    """
def backend_description(name: str) -> str:
    """
    The device a registered backend runs on, or why it is not available.
    """
def bf16_choose_path(path: str) -> None:
    """
    Tests only: precision='low' plans use `path` ('reference', or a hardware path this CPU has), or the best hardware path again when `path` is ''.
    """
def bf16_hardware_paths() -> list[str]:
    """
    The bf16 hardware paths this CPU has, best first.
    """
def bf16_pack_b(b: typing.Annotated[_npt.ArrayLike, _numpy.float32], trans_b: bool = False) -> _npt.NDArray[_numpy.uint16]:
    """
    B (K x N, or its transpose N x K with trans_b) as the kernels pack it: bf16 pairs in panels of 32 columns [Np/32][Kp/2][32][2], K and N padded to multiples of 32 with zeros.
    """
def bf16_path() -> str:
    """
    The path precision='low' plans use on the CPU: 'amx', 'avx512_bf16', 'reference' (forced), or 'none'.
    """
def bf16_round(x: typing.Annotated[_npt.ArrayLike, _numpy.float32]) -> _npt.NDArray[_numpy.uint16]:
    """
    float32 values as bf16 bits (uint16): round to nearest even, NaN kept NaN.
    """
def binary(arg0: str, arg1: typing.Any, arg2: typing.Any) -> Var:
    ...
def binary_ops() -> list[str]:
    ...
def borrow(array: typing.Any) -> Var:
    """
    A constant reading the NumPy array's buffer in place (a copy when it is not C-contiguous and aligned). The graph sees later writes to the array: evaluate what reads it before the array may change.
    """
def broadcast_to(arg0: Var, arg1: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> Var:
    ...
def cast(arg0: Var, arg1: typing.Any) -> Var:
    ...
def clear_plan_cache() -> None:
    ...
def compiled_simd_targets() -> list[str]:
    """
    The SIMD targets the kernels were compiled for, best first.
    """
def compute(arg0: collections.abc.Sequence[Var]) -> None:
    """
    Compute several Vars in one plan, keeping the values on them (for Vars that read no placeholder).
    """
def concat(values: typing.Any, axis: typing.SupportsInt | typing.SupportsIndex) -> Var:
    ...
def const(value: typing.Any, dtype: typing.Any = None, data_format: str = 'NCHW') -> Var:
    ...
def convert(x: Var, format: str) -> Var:
    ...
def cv_approx_poly_dp(points: _numpy.ndarray, epsilon: typing.SupportsFloat | typing.SupportsIndex, closed: bool) -> _numpy.ndarray:
    """
    OpenCV's approxPolyDP of Nx2 int32/float32 points: Mx1x2 points of the same dtype.
    """
def cv_contour_moments(points: _numpy.ndarray) -> list[float]:
    """
    The 24 moments (m.., mu.., nu..) of the polygon of Nx2 int32/float32 points.
    """
def cv_convex_hull(points: _numpy.ndarray, clockwise: bool, indices: bool) -> _npt.NDArray[_numpy.int32]:
    """
    Indices (int32) of the convex hull of Nx2 int32/float32 points, in OpenCV's order.
    """
def cv_draw_circle(arg0: _numpy.ndarray, arg1: typing.SupportsInt | typing.SupportsIndex, arg2: typing.SupportsInt | typing.SupportsIndex, arg3: typing.SupportsInt | typing.SupportsIndex, arg4: bytes, arg5: typing.SupportsInt | typing.SupportsIndex, arg6: typing.SupportsInt | typing.SupportsIndex, arg7: typing.SupportsInt | typing.SupportsIndex) -> None:
    """
    Draws OpenCV's circle into `image` in place.
    """
def cv_draw_ellipse(arg0: _numpy.ndarray, arg1: typing.SupportsInt | typing.SupportsIndex, arg2: typing.SupportsInt | typing.SupportsIndex, arg3: typing.SupportsInt | typing.SupportsIndex, arg4: typing.SupportsInt | typing.SupportsIndex, arg5: typing.SupportsInt | typing.SupportsIndex, arg6: typing.SupportsInt | typing.SupportsIndex, arg7: typing.SupportsInt | typing.SupportsIndex, arg8: bytes, arg9: typing.SupportsInt | typing.SupportsIndex, arg10: typing.SupportsInt | typing.SupportsIndex, arg11: typing.SupportsInt | typing.SupportsIndex) -> None:
    """
    Draws OpenCV's ellipse (center, axes, whole-degree angles) into `image` in place.
    """
def cv_draw_ellipse_box(arg0: _numpy.ndarray, arg1: typing.SupportsFloat | typing.SupportsIndex, arg2: typing.SupportsFloat | typing.SupportsIndex, arg3: typing.SupportsFloat | typing.SupportsIndex, arg4: typing.SupportsFloat | typing.SupportsIndex, arg5: typing.SupportsFloat | typing.SupportsIndex, arg6: bytes, arg7: typing.SupportsInt | typing.SupportsIndex, arg8: typing.SupportsInt | typing.SupportsIndex) -> None:
    """
    Draws OpenCV's ellipse inscribed in a rotated box into `image` in place.
    """
def cv_draw_line(arg0: _numpy.ndarray, arg1: typing.SupportsInt | typing.SupportsIndex, arg2: typing.SupportsInt | typing.SupportsIndex, arg3: typing.SupportsInt | typing.SupportsIndex, arg4: typing.SupportsInt | typing.SupportsIndex, arg5: bytes, arg6: typing.SupportsInt | typing.SupportsIndex, arg7: typing.SupportsInt | typing.SupportsIndex, arg8: typing.SupportsInt | typing.SupportsIndex) -> None:
    """
    Draws OpenCV's line(pt1, pt2) into `image` in place.
    """
def cv_draw_polylines(arg0: _numpy.ndarray, arg1: collections.abc.Sequence[typing.Annotated[_npt.ArrayLike, _numpy.int64]], arg2: bool, arg3: bytes, arg4: typing.SupportsInt | typing.SupportsIndex, arg5: typing.SupportsInt | typing.SupportsIndex, arg6: typing.SupportsInt | typing.SupportsIndex) -> None:
    """
    Draws OpenCV's polylines (Nx2 int64 point arrays) into `image` in place.
    """
def cv_draw_rectangle(arg0: _numpy.ndarray, arg1: typing.SupportsInt | typing.SupportsIndex, arg2: typing.SupportsInt | typing.SupportsIndex, arg3: typing.SupportsInt | typing.SupportsIndex, arg4: typing.SupportsInt | typing.SupportsIndex, arg5: bytes, arg6: typing.SupportsInt | typing.SupportsIndex, arg7: typing.SupportsInt | typing.SupportsIndex, arg8: typing.SupportsInt | typing.SupportsIndex) -> None:
    """
    Draws OpenCV's rectangle(pt1, pt2) into `image` in place.
    """
def cv_ellipse_to_poly(arg0: typing.SupportsInt | typing.SupportsIndex, arg1: typing.SupportsInt | typing.SupportsIndex, arg2: typing.SupportsInt | typing.SupportsIndex, arg3: typing.SupportsInt | typing.SupportsIndex, arg4: typing.SupportsInt | typing.SupportsIndex, arg5: typing.SupportsInt | typing.SupportsIndex, arg6: typing.SupportsInt | typing.SupportsIndex, arg7: typing.SupportsInt | typing.SupportsIndex) -> _npt.NDArray[_numpy.int32]:
    """
    OpenCV's ellipse2Poly: the arc's polygon as an Nx2 int32 array.
    """
def cv_fill_convex_poly(arg0: _numpy.ndarray, arg1: typing.Annotated[_npt.ArrayLike, _numpy.int64], arg2: bytes, arg3: typing.SupportsInt | typing.SupportsIndex, arg4: typing.SupportsInt | typing.SupportsIndex) -> None:
    """
    Fills OpenCV's fillConvexPoly polygon (Nx2 int64 points) into `image` in place.
    """
def cv_fill_poly(arg0: _numpy.ndarray, arg1: collections.abc.Sequence[typing.Annotated[_npt.ArrayLike, _numpy.int64]], arg2: bytes, arg3: typing.SupportsInt | typing.SupportsIndex, arg4: typing.SupportsInt | typing.SupportsIndex, arg5: typing.SupportsInt | typing.SupportsIndex, arg6: typing.SupportsInt | typing.SupportsIndex) -> None:
    """
    Fills OpenCV's fillPoly polygons (Nx2 int64 point arrays, even-odd) into `image` in place.
    """
def cv_find_contours(image: _numpy.ndarray, mode: typing.SupportsInt | typing.SupportsIndex, method: typing.SupportsInt | typing.SupportsIndex, offset_x: typing.SupportsInt | typing.SupportsIndex = 0, offset_y: typing.SupportsInt | typing.SupportsIndex = 0) -> tuple:
    """
    OpenCV's findContours of a 2-D uint8 image (nonzero = foreground; modes RETR_EXTERNAL..RETR_TREE) or int32 label image (RETR_FLOODFILL): (tuple of Nx1x2 int32 contours, 1xNx4 int32 hierarchy or None).
    """
def cv_image_encode(extension: str, image: _numpy.ndarray, params: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> _npt.NDArray[_numpy.uint8]:
    """
    The file bytes of a C-contiguous 8/16-bit BGR(A) image in the format of `extension` (lower case, no dot), with OpenCV's IMWRITE_* (id, value) parameters.
    """
def cv_image_moments(image: _numpy.ndarray, binary: bool) -> list[float]:
    """
    The 24 moments (m.., mu.., nu..) of a 2-D uint8/int16/float32/float64 image.
    """
def cv_image_probe(encoded: typing.Annotated[_npt.ArrayLike, _numpy.uint8], flags: typing.SupportsInt | typing.SupportsIndex, max_size: tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex] = (1048576, 1048576, 1073741824)) -> typing.Any:
    """
    (format, height, width, channels, sample_bytes, reduced_by, orientation) that decoding `encoded` with IMREAD_* `flags` gives (reduced_by: the IMREAD_REDUCED_* factor the decoder applied; orientation: the EXIF orientation still to apply), or None when it is no readable image. ValueError when the header declares an image beyond max_size (width, height, pixels).
    """
def cv_is_contour_convex(points: _numpy.ndarray) -> bool:
    """
    OpenCV's isContourConvex of Nx2 int32/float32 points.
    """
def cv_mask_bounding_rect(image: _numpy.ndarray) -> tuple:
    """
    (x, y, width, height) bounding the nonzero pixels of a 2-D uint8 image.
    """
def cv_min_area_rect(points: _numpy.ndarray) -> tuple:
    """
    OpenCV's minAreaRect of Nx2 int32/float32 points: (cx, cy, width, height, angle).
    """
def cv_point_polygon_test(points: _numpy.ndarray, x: typing.SupportsFloat | typing.SupportsIndex, y: typing.SupportsFloat | typing.SupportsIndex, measure_dist: bool) -> float:
    """
    OpenCV's pointPolygonTest of (x, y) against Nx2 int32/float32 points.
    """
def enable_test_backend(arg0: bool) -> None:
    """
    List (or hide) the 'test' backend: device-like buffers apart from host memory and a subset of ops, for testing placement and copies without a device.
    """
def evaluate(arg0: collections.abc.Sequence[Var]) -> list:
    """
    Compute several Vars in one plan; returns their values as NumPy arrays.
    """
def evaluate_as_constants(arg0: collections.abc.Sequence[Var]) -> list[Var]:
    """
    Compute several Vars in one plan; returns new constant Vars sharing the computed values (values are never written again, so later runs of the same graph leave them alone).
    """
def executor_stats() -> dict:
    ...
def expand_dims(x: Var, axes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> Var:
    ...
def force_portable_simd(arg0: bool) -> None:
    """
    Run every SIMD kernel on the portable fallback target (for testing), or back on the process's own (MNNPY_SIMD's, else the best).
    """
def gather(params: Var, indices: typing.Any, axis: typing.SupportsInt | typing.SupportsIndex = 0) -> Var:
    ...
def gather_nd(params: Var, indices: typing.Any) -> Var:
    ...
def gemm_bf16(a: typing.Annotated[_npt.ArrayLike, _numpy.float32], b: typing.Annotated[_npt.ArrayLike, _numpy.float32], trans_a: bool = False, trans_b: bool = False, path: str = 'reference', threads: typing.SupportsInt | typing.SupportsIndex = 1) -> _npt.NDArray[_numpy.float32]:
    """
    a @ b (op(a) M x K, op(b) K x N) in bf16 with float32 accumulation on `path` ('reference', or a hardware path this CPU has); threads > 1 uses the thread pool.
    """
def gemm_info() -> dict:
    """
    The CPU backend's GEMM micro-kernel tile (rows mr x columns nr) per dtype and the SIMD target running it.
    """
def get_backend() -> str:
    """
    The backend later plans are built for.
    """
def get_block_sparse() -> tuple[float, int, int, int]:
    """
    (threshold, block_n, block_k, min_weights) of the block-sparse scheme.
    """
def get_num_threads() -> int:
    ...
def get_precision() -> str:
    """
    The precision later plans are built for.
    """
def grad(ys: collections.abc.Sequence[Var], xs: collections.abc.Sequence[Var], seeds: collections.abc.Sequence[Var] = []) -> list[Var]:
    """
    Gradients of sum(ys[i] * seeds[i]) (seeds default to ones) with respect to each of xs, as new Vars.
    """
def has_grad_rule(op: str) -> bool:
    ...
def index(x: Var, index: typing.Any) -> Var:
    ...
def index_assign(x: Var, index: typing.Any, value: typing.Any) -> Var:
    """
    The array x[index] = value would give, as a new Var.
    """
def int8_gemm_info() -> dict:
    """
    The int8 GEMM on the current SIMD target: path ('amx', 'vnni', 'madd16', 'loop') and tile (mr, nr); amx_available (the CPU and OS allow AMX-INT8), amx_enabled (the switch), and the smallest product AMX takes (amx_min_rows rows, amx_min_depth depths; smaller ones run on 'vnni').
    """
def kv_cache_bytes(handle: typing.SupportsInt | typing.SupportsIndex) -> int:
    """
    Bytes the cache's buffers take now.
    """
def kv_cache_create(layers: typing.SupportsInt | typing.SupportsIndex, kv_heads: typing.SupportsInt | typing.SupportsIndex, head_dim: typing.SupportsInt | typing.SupportsIndex) -> int:
    """
    A new key/value cache; returns its handle.
    """
def kv_cache_release(handle: typing.SupportsInt | typing.SupportsIndex) -> None:
    """
    Frees a key/value cache.
    """
def kv_cache_reserve(handle: typing.SupportsInt | typing.SupportsIndex, tokens: typing.SupportsInt | typing.SupportsIndex, keep: typing.SupportsInt | typing.SupportsIndex) -> None:
    """
    Makes room for `tokens` tokens, keeping the first `keep`; a device's cache must have room before a run.
    """
def last_profile() -> list:
    """
    The steps of the last run made with the executor option 'profile' on.
    """
def load_graph(path: str) -> tuple[typing.Any, typing.Any, typing.Any]:
    """
    Read a graph file: (output Vars, their saved names, [(name, Var)] of every named node).
    """
def matmul(a: typing.Any, b: typing.Any, transpose_a: bool = False, transpose_b: bool = False) -> Var:
    """
    numpy.matmul of two operands; the transpose flags swap the last two axes of an operand first.
    """
def memory_limit_bytes() -> int:
    """
    The most bytes one array or one computation may take: physical memory plus swap, or less where RLIMIT_AS, the cgroup's memory.max or MNNPY_MEMORY_LIMIT says so; larger requests raise MemoryError.
    """
def non_max_suppression(boxes: _numpy.ndarray, scores: _numpy.ndarray, max_output_boxes_per_class: typing.SupportsInt | typing.SupportsIndex, iou_threshold: typing.SupportsFloat | typing.SupportsIndex, score_threshold: typing.SupportsFloat | typing.SupportsIndex | None = None, center_point_box: typing.SupportsInt | typing.SupportsIndex = 0) -> _npt.NDArray[_numpy.int64]:
    """
    ONNX NonMaxSuppression on NumPy arrays (boxes [B, N, 4], scores [B, C, N], float32, C order): the selected (batch, class, box) triples as an int64 [M, 3] array.
    """
def op(name: str, inputs: collections.abc.Sequence[Var], attrs: dict = {}) -> typing.Any:
    ...
def pad(x: Var, pads: collections.abc.Sequence[tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex]], mode: str = 'constant', value: typing.SupportsFloat | typing.SupportsIndex = 0.0) -> Var:
    """
    numpy.pad with (before, after) per axis; mode: constant, edge, reflect, symmetric, wrap.
    """
def placeholder(shape: typing.Any, dtype: typing.Any, data_format: str = 'NCHW') -> Var:
    ...
def promote_types(arg0: typing.Any, arg1: typing.Any) -> _numpy.dtype[typing.Any]:
    ...
def read_onnx(source: typing.Any) -> dict:
    """
    An ONNX model from a path (mapped, not read) or a bytes-like object, as plain data: a dict of ir_version, producer_name, producer_version, opset_import [(domain, version)] and graph. A graph is a dict of name, nodes [(op_type, domain, name, inputs, outputs, {attribute: value})], initializers {name: read-only ndarray}, inputs and outputs [(name, elem_type, dims or None)], dims holding ints, dim_param strings or None. Attribute values: float, int, str, lists of those, an ndarray (TENSOR) or a graph (GRAPH). ValueError names what is wrong in a damaged or unsupported model.
    """
def rebind(var: Var, target: Var) -> None:
    """
    Makes `var` refer to `target`'s node (in place, for every Python reference to `var`).
    """
def reduce(kind: str, x: Var, axes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None, keepdims: bool = False) -> Var:
    ...
def registered_ops() -> list[str]:
    ...
def release_free_memory() -> bool:
    """
    Returns the C heap's free memory to the system (glibc's malloc_trim); True if some was returned.
    """
def reshape(arg0: Var, arg1: typing.Any) -> Var:
    ...
def save_graph(outputs: collections.abc.Sequence[Var], path: str) -> None:
    """
    Write the graph behind `outputs` to a graph file.
    """
def scalar(value: typing.Any, partner: typing.Any = None) -> Var:
    """
    A Var for an operand; Python numbers take the partner's dtype as NumPy 2 does.
    """
def set_backend(name: str) -> None:
    """
    Build later plans for the backend `name` (one of usable_backends()): nodes it supports run there, the others on the CPU, with copies between them.
    """
def set_block_sparse(threshold: typing.SupportsFloat | typing.SupportsIndex, block_n: typing.SupportsInt | typing.SupportsIndex = 0, block_k: typing.SupportsInt | typing.SupportsIndex = 0, min_weights: typing.SupportsInt | typing.SupportsIndex = 1024) -> None:
    """
    When MatMul and 1x1 convolutions with constant float32 weights run block-sparse: from `threshold` (share of values in all-zero blocks; above 1: never), with blocks block_n x block_k (0: chosen per weight), for weights of at least `min_weights` values.
    """
def set_executor_option(arg0: str, arg1: bool) -> None:
    ...
def set_int8_amx(on: bool, min_rows: typing.SupportsInt | typing.SupportsIndex = 16, min_depth: typing.SupportsInt | typing.SupportsIndex = 64) -> tuple[bool, int, int]:
    """
    Allows (True) or forbids (False) the AMX-INT8 path of the int8 GEMM for later products of at least min_rows rows and min_depth depths (both >= 1, else ValueError); returns the previous (on, min_rows, min_depth). Without AMX-INT8 on the CPU the path stays unused either way. The environment variable MNNPY_INT8_AMX=0 forbids it from the start.
    """
def set_num_threads(arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
    ...
def set_precision(name: str) -> None:
    """
    Build later plans for the precision `name` ('normal', 'high' or 'low'): at 'low' a device backend may round float32 operands to float16 where that is faster; the CPU computes as given.
    """
def set_simd_target(name: str) -> None:
    """
    Run every CPU kernel on the SIMD target `name` (one of usable_simd_targets()), 'portable' or 'best'.
    """
def set_thread_backend(name: str) -> str:
    """
    Build this thread's later plans for the backend `name` ('' clears it, going back to set_backend's); returns the previous choice ('' when there was none).
    """
def set_thread_precision(name: str) -> str:
    """
    Build this thread's later plans for the precision `name` ('' clears it, going back to set_precision's); returns the previous choice ('' when there was none).
    """
def share_value(placeholder: Var, value: Var) -> None:
    """
    Make the placeholder hold a computed Var's value, without a copy (the value is never written again).
    """
def simd_target() -> str:
    """
    The SIMD target the CPU kernels run on now.
    """
def slice(x: Var, starts: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], sizes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> Var:
    ...
def split(x: Var, sizes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], axis: typing.SupportsInt | typing.SupportsIndex = 0) -> list[Var]:
    """
    Pieces of the given sizes along the axis.
    """
def split_at(x: Var, indices: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], axis: typing.SupportsInt | typing.SupportsIndex = 0) -> list[Var]:
    """
    numpy.split at the given indices.
    """
def split_sections(x: Var, sections: typing.SupportsInt | typing.SupportsIndex, axis: typing.SupportsInt | typing.SupportsIndex = 0, equal: bool = True) -> list[Var]:
    """
    numpy.split (equal) or numpy.array_split into a number of pieces.
    """
def squeeze(x: Var, axes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None) -> Var:
    ...
def stack(values: typing.Any, axis: typing.SupportsInt | typing.SupportsIndex = 0) -> Var:
    ...
def strided_slice(x: Var, begin: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], end: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], strides: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], begin_mask: typing.SupportsInt | typing.SupportsIndex = 0, end_mask: typing.SupportsInt | typing.SupportsIndex = 0, ellipsis_mask: typing.SupportsInt | typing.SupportsIndex = 0, new_axis_mask: typing.SupportsInt | typing.SupportsIndex = 0, shrink_axis_mask: typing.SupportsInt | typing.SupportsIndex = 0) -> Var:
    ...
def take_now(x: Var, indices: typing.Any, axis: typing.SupportsInt | typing.SupportsIndex | None) -> Var | None:
    """
    numpy.take(x, indices, axis) evaluated now when x's values are known and indices is a C-contiguous NumPy integer array (IndexError for an out-of-range index); else None.
    """
def tile(x: Var, multiples: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> Var:
    ...
def transpose(x: Var, perm: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None) -> Var:
    ...
def unary(arg0: str, arg1: Var) -> Var:
    ...
def unary_ops() -> list[str]:
    ...
def unique_flat(x: Var, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False, equal_nan: bool = True) -> tuple:
    """
    numpy.unique of x's values (any shape, read in C order), evaluated now: (values, first index, inverse, counts) as 1-D constant Vars, None for parts not asked for.
    """
def unique_rows(x: Var, return_inverse: bool = False, return_counts: bool = False, equal_nan: bool = True) -> tuple:
    """
    numpy.unique of the rows of a 2-D x (lexicographic order), evaluated now: (None, first row of each distinct row, inverse, counts).
    """
def usable_backends() -> list[str]:
    """
    The backends plans can be requested for, the CPU first.
    """
def usable_simd_targets() -> list[str]:
    """
    The compiled SIMD targets this CPU supports, best first (any of them can be chosen).
    """
def where(arg0: Var, arg1: Var, arg2: Var) -> Var:
    ...
def with_format(x: Var, format: str) -> Var:
    """
    x's values and shape under the layout tag `format` (no data moves).
    """
CHANNEL_BLOCK: int = 8
graph_format_version: tuple = (1, 0)
