"""Facts about array views (``Target.array_stride_facts``): a launch passing a
layout-"A" array whose innermost stride is a small multiple of its item size runs code
compiled for that stride (a ``range`` of one value on the stride's parameter, which
LLVM folds into the addresses), so that a vectorizing driver loads ``x[::2]`` and the
rows of ``a[1:-1, 1:-1]`` as vectors; any other stride runs the general code."""

import llvmlite.binding as ll
import numpy as np
from numba.core import types

import numba_gpux as gpux
from numba_gpux import irlex
from numba_gpux.abi import NO_FACTS, LaunchFacts
from numba_gpux.devices import resolve_target


def _affine(x, out):
    i = gpux.grid(1)
    if i < out.size:
        out[i] = x[i] * 2 + 1


def _inner(a, out):
    i, j = gpux.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = a[i, j] - a[i, 0]


def _stride_facts_compiled(kernel) -> set:
    return {key[2].strides for key in kernel._code}


def test_each_listed_stride_runs_its_own_code(opencl_device):
    """Views stepping by 2, 3, 4 and -1 elements each get code of their own and the
    right results, in any order and again after other strides (the launch key tells
    them apart); steps 5 and -2 share the general code."""
    assert resolve_target("opencl").array_stride_facts == (1, 2, 3, 4, -1)
    k = gpux.jit(_affine)
    base = np.arange(100, dtype=np.float32) * 1.5
    d = gpux.to_device(base)
    out = gpux.device_array(16, np.float32)
    for step in (2, 3, 5, 4, -1, 2, -2, 3, 5, -1):
        view = d[::step][:16]
        assert view.layout == "A"
        k[1, 16](view, out)
        np.testing.assert_array_equal(out.copy_to_host(), base[::step][:16] * 2 + 1,
                                      err_msg=f"step {step}")
    assert _stride_facts_compiled(k) == {((0, 8),), ((0, 12),), ((0, 16),), ((0, -4),), ()}
    assert k.stats["target_compiles"] == 5


def test_a_sub_block_view_runs_unit_stride_code(opencl_device):
    """``a[1:-1, 1:-1]`` of a C-ordered matrix: Numba types it layout "A", so its rows'
    step is known only at run time; the launch tells the code it is one element."""
    k = gpux.jit(_inner)
    a = np.arange(80.0).reshape(8, 10) ** 1.5
    d = gpux.to_device(a)
    view = d[1:-1, 1:-1]
    assert view.layout == "A" and view._stride_fact_ == 8
    out = gpux.device_array((6, 8))
    k[(1, 1), (6, 8)](view, out)
    np.testing.assert_array_equal(out.copy_to_host(), a[1:-1, 1:-1] - a[1:-1, 1:2])
    # a column view's rows step by the matrix's row: no fact, the general code
    col = d[:, 2:6].T  # layout "A", innermost stride 80 bytes
    assert col.layout == "A" and col._stride_fact_ == 0
    out2 = gpux.device_array((4, 8))
    k[(1, 1), (4, 8)](col, out2)
    np.testing.assert_array_equal(out2.copy_to_host(), a[:, 2:6].T - a[:, 2:6].T[:, :1])
    assert _stride_facts_compiled(k) == {((0, 8),), ()}


def test_a_last_dimension_of_one_element_states_no_stride(opencl_device):
    d = gpux.to_device(np.zeros((6, 4)))
    assert d[:, ::4].shape == (6, 1) and d[:, ::4]._stride_fact_ == 0
    assert d[::2, ::2]._stride_fact_ == 16


def test_the_stride_folds_into_the_addresses():
    """The code for a stride has the one-value range on the stride's parameter, and the
    parameter is no longer read: LLVM put the constant in every address."""
    k = gpux.jit(_affine)
    sig = (types.float32[:], types.float32[::1])
    tgt = resolve_target("opencl")
    general = k.code_for(sig, tgt)
    known = k.code_for(sig, tgt, LaunchFacts(strides=((0, 8),)))
    assert k.code_for(sig, tgt, LaunchFacts(strides=((0, 8),))) is known  # kept
    name = known.kernels[0]

    def stride_param_reads(art) -> int:
        fn = ll.parse_assembly(art.llvm_ir).get_function(name)
        stride = list(fn.arguments)[3]  # x: buffer, offset, shape[0], strides[0]
        header = irlex.code(irlex.line_tokens(next(
            ln for ln in art.llvm_ir.split("\n") if ln.startswith("define"))))
        spelled = str(stride).split()[-1]
        uses = sum(irlex.code(irlex.line_tokens(str(ins))).count(spelled)
                   for b in fn.blocks for ins in b.instructions)
        return uses, header

    uses, header = stride_param_reads(known)
    assert uses == 0, known.llvm_ir
    assert ["range", "(", "i64", "8", ",", "9", ")"] == header[
        header.index("range"):header.index("range") + 7], header
    uses, _ = stride_param_reads(general)
    assert uses > 0, general.llvm_ir
    assert NO_FACTS == LaunchFacts() and not NO_FACTS.param_ranges(sig)


def test_targets_without_the_facts_list_none():
    assert resolve_target("cuda").array_stride_facts == ()
    assert resolve_target("opencl-c").array_stride_facts == ()
