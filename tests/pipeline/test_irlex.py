"""The IR lexer: lossless tokens that know strings, names, comments and metadata."""

import random

import numpy as np

import pytest

import numba_gpux as gpux
from numba_gpux import irlex
from numba_gpux.irlex import (ATTR, COMMENT, GLOBAL, LOCAL, META, NL, NUMBER, PUNCT, STRING,
                              WORD, WS, kind, tokens)

#: spellings a user may put in a string, a name or a comment, that look like IR
TRICKY = ["ptr", "addrspace(1)", "double", "half", "i24", "i128", "define", "declare",
          "@llvm.memcpy.p0.p0.i64", "!dbg", "#0", '"', "\\", 'c"x"', "\u00e9\u4e2d\U0001f600",
          "", "call @sin(x)", "%x = load", "; not a comment", "}", "{", "\\22", "\\\\"]


def _kinds(text):
    return [(kind(t), t) for t in tokens(text) if kind(t) not in (WS,)]


def test_round_trip_on_tricky_text():
    for s in TRICKY:
        for text in (s, f'@.s = constant [3 x i8] c"{s}"\n', f"  %v = add i32 1, 2 ; {s}\n",
                     f'@"{s}" = global i32 0', f'!0 = !{{!"{s}"}}'):
            assert irlex.join(tokens(text)) == text


def test_round_trip_on_random_text():
    rng = random.Random(1234)
    alphabet = 'abci0123456789 %@!#";,()[]{}<>=*:\\\n\t.-$_xc\u00e9\u4e2d'
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 80)))
        assert irlex.join(tokens(text)) == text
        assert all(t for t in tokens(text))


def test_string_constant_is_one_token_whatever_it_holds():
    for s in TRICKY:
        if '"' in s:
            continue
        line = f'@.str = internal constant [9 x i8] c"{s}\\00", align 1'
        toks = tokens(line)
        strings = [t for t in toks if kind(t) == STRING]
        assert strings == [f'c"{s}\\00"']
        # nothing inside the string is read as a type or a name
        words = {t for t in toks if kind(t) == WORD}
        assert words == {"internal", "constant", "x", "i8", "align"}


def test_kinds_of_a_call_line():
    line = ('  %r = tail call noundef range(i64 0, 5) double @"sin x"(double %"a b", ptr '
            'addrspace(1) @g) #3, !dbg !12 ; ptr half')
    got = _kinds(line)
    assert got == [
        (LOCAL, "%r"), (PUNCT, "="), (WORD, "tail"), (WORD, "call"), (WORD, "noundef"),
        (WORD, "range"), (PUNCT, "("), (WORD, "i64"), (NUMBER, "0"), (PUNCT, ","),
        (NUMBER, "5"), (PUNCT, ")"), (WORD, "double"), (GLOBAL, '@"sin x"'), (PUNCT, "("),
        (WORD, "double"), (LOCAL, '%"a b"'), (PUNCT, ","), (WORD, "ptr"), (WORD, "addrspace"),
        (PUNCT, "("), (NUMBER, "1"), (PUNCT, ")"), (GLOBAL, "@g"), (PUNCT, ")"), (ATTR, "#3"),
        (PUNCT, ","), (META, "!dbg"), (META, "!12"), (COMMENT, "; ptr half")]


def test_numbers_and_metadata():
    text = ('store double 0x3FF0000000000000, ptr %p\n'
            'store half 0xH3C00, ptr %q\n%c = fadd float -1.500000e+00, 1.0e-10\n'
            '!0 = !{!"x\\22y", i32 -7, !1}\n!llvm.module.flags = !{!0}\n'
            '#dbg_value(i32 %a, !5, !DIExpression(), !6)\n')
    toks = tokens(text)
    assert irlex.join(toks) == text
    nums = [t for t in toks if kind(t) == NUMBER]
    assert nums == ["0x3FF0000000000000", "0xH3C00", "-1.500000e+00", "1.0e-10", "-7"]
    metas = [t for t in toks if kind(t) == META]
    assert metas == ["!0", '!"x\\22y"', "!1", "!llvm.module.flags", "!0", "!5",
                     "!DIExpression", "!6"]
    assert [t for t in toks if kind(t) == ATTR] == ["#dbg_value"]
    assert toks.count("\n") == 6 and kind("\n") == NL


def test_label_lines():
    assert irlex.is_label(tokens("entry:"))
    assert irlex.is_label(tokens("12:                                    ; preds = %5"))
    assert irlex.is_label(tokens('"a b":'))
    assert not irlex.is_label(tokens("  %x = add i32 1, 2"))
    assert irlex.instruction(tokens("entry:")) == (None, -1)


def test_names_quote_and_unquote():
    for n in ["plain", "with space", 'qu"ote', "back\\slash", "\u00e9t\u00e9", "12", "a.b$c-d",
              "new\nline"]:
        tok = irlex.spell_global(n)
        assert irlex.join(tokens(tok)) == tok and len(tokens(tok)) == 1, tok
        assert irlex.name(tok) == n
        assert irlex.name(irlex.spell_local(n)) == n
    assert irlex.spell_global("plain") == "@plain"
    assert irlex.spell_global("a b") == '@"a b"'
    assert irlex.string_bytes('c"a\\00\\5C\\22"') == b'a\x00\\"'


def test_instruction_definition_and_callee():
    toks = tokens('  %v = tail call i32 (ptr, ...) @printf(ptr @"fmt ptr", i32 %x)')
    assert irlex.instruction(toks)[0] == "call"
    d = irlex.definition(toks)
    assert toks[d[0]] == "%v" and toks[d[1]] == "tail"
    assert irlex.defined_value(toks) == "%v"
    at = irlex.callee(toks)
    assert toks[at] == "@printf"
    assert irlex.callee(tokens("  call void asm sideeffect \"\", \"\"()")) is None
    store = tokens("  store i32 %v, ptr @g, align 4")
    assert irlex.instruction(store)[0] == "store" and irlex.definition(store) is None


def test_match_paren_nests_brackets():
    toks = tokens("call void @f({ i32, [2 x <4 x float>] } %a, ptr (i32) %g)")
    i = toks.index("(")
    j = irlex.match_paren(toks, i)
    assert toks[j] == ")" and j == len(toks) - 1
    with pytest.raises(ValueError):
        irlex.match_paren(tokens("f(a, (b)"), 1)


def test_define_name_and_functions():
    text = ('; ModuleID = "x"\n@.s = constant [9 x i8] c"define @q(\\00"\n'
            'define internal fastcc void @"k 1"(ptr %a) #0 {\nentry:\n  ret void\n}\n\n'
            'declare double @sin(double)\n'
            'define i32 @f() {\n  ret i32 0\n}\n')
    ls = irlex.lines(text)
    fns = irlex.functions(ls)
    assert [f.name for f in fns] == ["k 1", "f"]
    assert ls[fns[0].stop] == "}" and ls[fns[0].start] == "entry:"
    decl = tokens("declare double @sin(double)")
    assert irlex.name(decl[irlex.define_name(decl)]) == "sin"
    assert irlex.header_keyword(decl) == "declare"
    assert irlex.header_keyword(tokens("@g = global i32 0")) == "global"
    assert irlex.header_keyword(tokens("  ret void")) is None


def test_replace_and_type_words():
    toks = tokens('  %p = getelementptr i8, ptr %s, i24 3 ; i16 double')
    at = toks.index("ptr")
    new = irlex.replace(toks, at, at + 1, ["ptr", " ", "addrspace", "(", "4", ")"])
    assert irlex.join(new) == '  %p = getelementptr i8, ptr addrspace(4) %s, i24 3 ; i16 double'
    widths, words = irlex.type_words(tokens('%"i16" = load double, ptr @i32, c"i64 half"'))
    assert widths == set() and "double" in words and "half" not in words
    widths, _ = irlex.type_words(tokens("%x = add i24 %a, %b"))
    assert widths == {24}


@pytest.fixture(scope="module")
def real_modules():
    @gpux.jit
    def kern(a, out):
        i = gpux.grid(1)
        if i < a.size:
            print("hello from a kernel", i)
            out[i] = a[i] * 2.0 + 1.0

    @gpux.jit
    def plain(a, out):
        i = gpux.grid(1)
        if i < a.size:
            out[i] = a[i] * np.float32(2.0) + gpux.local.array(1, np.float32)[0] * 0

    sig = "void(float32[::1], float32[::1])"
    texts = [gpux.compile(kern, sig, target=t).llvm_ir for t in ("opencl", "cuda")]
    return texts + [gpux.compile(plain, sig, target="metal").llvm_ir]


def test_round_trip_on_compiled_modules(real_modules):
    for text in real_modules:
        toks = tokens(text)
        assert irlex.join(toks) == text
        # the user's string stays one token
        assert "__gpux_printf" not in text or any("hello from a kernel" in t for t in toks if kind(t) == STRING)
        # every line tokenized alone gives the same tokens
        assert [t for ln in irlex.lines(text) for t in tokens(ln) + ["\n"]][:-1] == toks
        fns = irlex.functions(irlex.lines(text))
        assert fns and all(irlex.lines(text)[f.stop] == "}" for f in fns)


def test_word_scanner_agrees_with_the_tokens():
    rng = random.Random(99)
    alphabet = 'abci0123456789 %@!#";,()[]{}<>=*:\\\n\t.-$_xceE+suKH'
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
        assert irlex.words(text) == {t for t in tokens(text) if kind(t) == WORD}, text
    for s in TRICKY:
        line = f'@.s = internal constant [9 x i8] c"{s}\\00" ; {s}'
        assert irlex.words(line) == {"internal", "constant", "x", "i8"}


def test_word_scanner_on_compiled_modules(real_modules):
    for text in real_modules:
        assert irlex.words(text) == {t for t in tokens(text) if kind(t) == WORD}


def test_local_name_scanner_agrees_with_the_tokens(real_modules):
    rng = random.Random(31)
    alphabet = 'abci0123456789 %@!#";,()[]{}<>=*:\\\t.-$_xc'
    for _ in range(3000):
        line = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
        assert irlex.local_names(line) == [t for t in tokens(line) if kind(t) == LOCAL], line
    for text in real_modules:
        for line in irlex.lines(text):
            assert irlex.local_names(line) == [t for t in tokens(line) if kind(t) == LOCAL]
    assert irlex.local_names('  %"a %b" = call i32 @f(ptr @"%c", ptr c"%d") ; %e') == ['%"a %b"']


def test_global_name_scanner_agrees_with_the_tokens(real_modules):
    rng = random.Random(37)
    alphabet = 'abci0123456789 %@!#";,()[]{}<>=*:\\\t.-$_xc'
    for _ in range(3000):
        line = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
        assert irlex.global_names(line) == [t for t in tokens(line) if kind(t) == GLOBAL], line
    for text in real_modules:
        for line in irlex.lines(text):
            assert irlex.global_names(line) == [t for t in tokens(line) if kind(t) == GLOBAL]
    assert irlex.global_names('  call void @"a @b"(ptr %"@c", ptr c"@d") ; @e') == ['@"a @b"']
