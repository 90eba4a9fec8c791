"""``cuda.descriptor.cuda_target``: numba.cuda's target descriptor, whose typing and
lowering contexts are the ones the facade's kernels are typed and lowered in."""

import enum
import subprocess
import sys
import textwrap

import numpy as np
from numba.core import types

from numba_gpux import cuda
from numba_gpux.context import target_context, typing_context


class Colour(enum.IntEnum):
    red = 1
    green = 2


def test_the_contexts_are_the_ones_kernels_use():
    target = cuda.descriptor.cuda_target
    assert target.typing_context is typing_context()
    assert target.target_context is target_context()
    assert str(target.target_context.get_value_type(types.int32)) == "i32"
    import numba_gpux.cuda.descriptor as by_path

    assert by_path.cuda_target is target


def test_an_int_enum_member_does_not_convert_to_an_array():
    ctx = cuda.descriptor.cuda_target.typing_context
    member = types.IntEnumMember(Colour, types.int64)
    assert ctx.can_convert(member, types.int64[::1]) is None
    assert ctx.can_convert(member, types.int64) is not None
    assert ctx.can_convert(member, types.float64) is not None


def test_an_int_enum_member_converts_in_a_kernel_as_the_context_says(device):
    # the conversion the context allows (an int enum member to int64) types in a kernel
    @cuda.jit
    def colour_code(out):
        out[0] = Colour.green + 40

    out = cuda.to_device(np.zeros(1, np.int64))
    colour_code[1, 1](out)
    assert out.copy_to_host()[0] == 42


def test_importing_it_builds_no_context():
    code = textwrap.dedent("""
        from numba_gpux import cuda
        from numba_gpux import context
        target = cuda.descriptor.cuda_target
        assert not context._ready, "importing the descriptor built the contexts"
        target.typing_context
        assert context._ready
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
