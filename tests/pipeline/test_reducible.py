"""reducible.py: loops entered at two blocks get a copy per extra entry, and the result
is IR that LLVM's verifier accepts and whose loops each have one entry."""

from llvmlite import binding as ll

from numba_gpux import irlex as lx
from numba_gpux.divergence import blocks
from numba_gpux.reducible import irreducible_region, make_reducible


def test_a_cycle_entered_at_two_blocks_is_found():
    succ = {"e": ["a", "b"], "a": ["b"], "b": ["a", "x"], "x": []}
    assert irreducible_region(succ, ["e", "a", "b", "x"]) == (["a", "b"], ["a", "b"])


def test_nested_loops_with_one_entry_each_are_reducible():
    succ = {"e": ["h"], "h": ["i", "x"], "i": ["j"], "j": ["i", "h"], "x": []}
    assert irreducible_region(succ, ["e", "h", "i", "j", "x"]) is None


def test_an_inner_loop_entered_from_outside_its_header_is_found():
    # h -> i -> j -> i is an inner loop; r enters it at j, from outside the outer loop
    succ = {"e": ["h", "r"], "h": ["i", "x"], "i": ["j"], "j": ["i", "h"], "r": ["j"], "x": []}
    region, entries = irreducible_region(succ, ["e", "h", "i", "j", "r", "x"])
    assert set(entries) >= {"j"} and len(entries) == 2


_MODULE = """
define void @k(ptr %out, i32 %n, i1 %c) {
entry:
  %slot = alloca i32, align 4
  store i32 0, ptr %slot, align 4
  br i1 %c, label %head, label %inner
head:
  %a = load i32, ptr %slot, align 4
  %a1 = add i32 %a, 1
  store i32 %a1, ptr %slot, align 4
  %more = icmp slt i32 %a1, %n
  br i1 %more, label %inner, label %done
inner:
  %b = load i32, ptr %slot, align 4
  %b2 = mul i32 %b, 2
  store i32 %b2, ptr %out, align 4
  %again = icmp sgt i32 %b2, 100
  br i1 %again, label %done, label %head
done:
  ret void
}
"""


def _body(text):
    ls = lx.lines(text)
    f = lx.functions(ls)[0]
    return ls, f


def _succ(body):
    bl = blocks(body)
    return {b.label: list(b.succ) for b in bl}, [b.label for b in bl]


def test_make_reducible_copies_the_loop_for_its_second_entry():
    ls, f = _body(_MODULE)
    body = ls[f.start:f.stop]
    assert irreducible_region(*_succ(body)) is not None
    new = make_reducible(body)
    assert irreducible_region(*_succ(new)) is None
    text = "\n".join(ls[:f.start] + new + ls[f.stop:])
    ll.parse_assembly(text).verify()
    # the copy's blocks are new; the original ones are all still there
    labels = {b.label for b in blocks(new)}
    assert {"%entry", "%head", "%inner", "%done"} <= labels and len(labels) == 6


def test_a_region_with_a_phi_is_left_as_it_is():
    text = _MODULE.replace("  %b = load i32, ptr %slot, align 4",
                           "  %p = phi i32 [ 0, %entry ], [ %a1, %head ]\n"
                           "  %b = load i32, ptr %slot, align 4")
    ls, f = _body(text)
    body = ls[f.start:f.stop]
    assert make_reducible(body) == body


def test_a_reducible_body_is_unchanged():
    text = _MODULE.replace("br i1 %c, label %head, label %inner", "br label %head")
    ls, f = _body(text)
    body = ls[f.start:f.stop]
    assert make_reducible(body) == body
