#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""xdrgen: turn an RFC 4506 .x file into C codecs for Braid.

    xdrgen.py [--include-dir DIR]... --out-dir OUT path/NAME.x

writes OUT/NAME.h (types, constants, prototypes, program descriptors),
OUT/NAME.c (codecs), OUT/NAME_rt.c (a self-checking round-trip test) and
OUT/NAME_fuzz.c (a libFuzzer target over every decoder).  The runtime they
use is nfsd/xdr.h.  Python standard library only.

'%' lines go to the header verbatim.  For '%#include "X.h"', X.x is looked
up in the include directories: its types and constants become known here
(its codecs come from its own generated header); a type found nowhere is
assumed to be declared, with xdr_dec_T/xdr_enc_T, by some included header.
"""

import argparse
import errno as _errno
import os
import re
import sys

# ------------------------------------------------------------------ errors


class XdrError(Exception):
    def __init__(self, path, line, msg):
        super().__init__(f'{path}:{line}: {msg}')


# ------------------------------------------------------------------- names

C_KEYWORDS = set('''
auto break case char const continue default do double else enum extern float
for goto if inline int long register restrict return short signed sizeof
static struct switch typedef union unsigned void volatile while _Alignas
_Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn _Static_assert
_Thread_local asm typeof alignas alignof noreturn static_assert thread_local
'''.split())

# Macros and types that the generated code and its includes make visible.
C_MACROS = set('''
bool true false NULL offsetof errno unix linux i386 EOF stdin stdout stderr
assert BUFSIZ FILENAME_MAX SIZE_MAX SSIZE_MAX PTRDIFF_MIN PTRDIFF_MAX
INTPTR_MIN INTPTR_MAX UINTPTR_MAX INTMAX_MIN INTMAX_MAX UINTMAX_MAX
SIG_ATOMIC_MIN SIG_ATOMIC_MAX WCHAR_MIN WCHAR_MAX WINT_MIN WINT_MAX
INTMAX_C UINTMAX_C UIO_MAXIOV IOV_MAX CHAR_BIT INT_MAX INT_MIN UINT_MAX
LONG_MAX LONG_MIN ULONG_MAX
'''.split())
for _w in (8, 16, 32, 64):
    for _p in ('INT%d_MIN', 'INT%d_MAX', 'UINT%d_MAX', 'INT%d_C', 'UINT%d_C',
               'INT_LEAST%d_MIN', 'INT_LEAST%d_MAX', 'UINT_LEAST%d_MAX',
               'INT_FAST%d_MIN', 'INT_FAST%d_MAX', 'UINT_FAST%d_MAX'):
        C_MACROS.add(_p % _w)
C_MACROS |= {n for n in dir(_errno) if re.fullmatch(r'E[A-Z0-9]+', n)}

C_TYPES = set('''
int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t intptr_t
uintptr_t intmax_t uintmax_t size_t ssize_t ptrdiff_t wchar_t max_align_t
off_t FILE iovec va_list
'''.split())

# Names of nfsd/xdr.h.
RUNTIME_NAMES = set('''
xdr_arena xdr_arena_chunk xdr_opaque xdr_string xdr_dec xdr_enc xdr_dec_fn
xdr_enc_fn xdr_proc_desc xdr_vers_desc
'''.split())
# T whose xdr_dec_T / xdr_enc_T is already a runtime function.
RUNTIME_CODECS = set('''
uint32 int32 uint64 int64 bool enum float double pad opaque_fixed opaque
string array alloc init left reserve ref bytes flatten void error array_len
'''.split())
# Identifiers of generated function bodies (a #define of one would break them).
GEN_LOCALS = set('''
d e v r t err more p depth hint arm bound len val u k a w n x i0 i1 i2 i3
labels it vp used iov out ft ti buf cap size data seed dir de dh path f c j
word pat plen nw ntypes iters ty ea va da maxiov rc dv
'''.split())

GLOBAL_RESERVED = C_KEYWORDS | C_MACROS | C_TYPES | RUNTIME_NAMES | GEN_LOCALS
FIELD_RESERVED = C_KEYWORDS | C_MACROS

XDR_KEYWORDS = set('''
bool case const default double quadruple enum float hyper int opaque string
struct switch typedef union unsigned void program version
'''.split())

# int32_t etc. are runtime C types: "typedef int int32_t;" is accepted and
# not re-emitted.  int32 etc. keep their typedef but use the runtime codecs.
BUILTIN_TYPEDEFS = {'int32_t': 'int', 'uint32_t': 'uint',
                    'int64_t': 'hyper', 'uint64_t': 'uhyper'}
RUNTIME_ALIASES = {'int32': 'int', 'uint32': 'uint',
                   'int64': 'hyper', 'uint64': 'uhyper'}

PRIM_C = {'int': 'int32_t', 'uint': 'uint32_t', 'hyper': 'int64_t',
          'uhyper': 'uint64_t', 'float': 'float', 'double': 'double',
          'bool': 'bool'}
PRIM_CODEC = {'int': 'int32', 'uint': 'uint32', 'hyper': 'int64',
              'uhyper': 'uint64', 'float': 'float', 'double': 'double',
              'bool': 'bool'}
PRIM_WIRE = {'int': 4, 'uint': 4, 'hyper': 8, 'uhyper': 8, 'float': 4,
             'double': 8, 'bool': 4}
PRIM_XDR = {'int': 'int', 'uint': 'unsigned int', 'hyper': 'hyper',
            'uhyper': 'unsigned hyper', 'float': 'float', 'double': 'double',
            'bool': 'bool'}


def cglobal(name):
    """C spelling of a type, constant or enumerator name."""
    if name in GLOBAL_RESERVED or name in RUNTIME_CODECS and name not in RUNTIME_ALIASES:
        return name + '_'
    return name


def c_ident(s):
    return re.sub(r'[^A-Za-z0-9_]', '_', s)


# ------------------------------------------------------------------ model


class Val:
    """A number or a constant name, as written."""

    def __init__(self, text, num=None, name=None, line=0):
        self.text, self.num, self.name, self.line = text, num, name, line


class Prim:
    def __init__(self, kind):
        self.kind = kind


class Ref:
    def __init__(self, name, line, tag=None):
        self.name, self.line, self.tag = name, line, tag


class Fixed:
    def __init__(self, elem, size):
        self.elem, self.size = elem, size


class VarArr:
    def __init__(self, elem, max):
        self.elem, self.max = elem, max


class OpaqueFixed:
    def __init__(self, size):
        self.size = size


class OpaqueVar:
    def __init__(self, max):
        self.max = max


class String:
    def __init__(self, max):
        self.max = max


class Opt:
    def __init__(self, elem):
        self.elem = elem


class Void:
    pass


class Anon:
    """An unnamed struct/union/enum body inside a declaration."""

    def __init__(self, d):
        self.d = d


class Decl:
    def __init__(self, name, t, line):
        self.name, self.t, self.line = name, t, line


class Def:
    kind = None

    def __init__(self, name, line):
        self.name, self.line = name, line
        self.spec = None


class ConstDef(Def):
    kind = 'const'

    def __init__(self, name, val, line):
        super().__init__(name, line)
        self.val = val


class TypedefDef(Def):
    kind = 'typedef'

    def __init__(self, name, decl, line):
        super().__init__(name, line)
        self.decl = decl


class EnumDef(Def):
    kind = 'enum'

    def __init__(self, name, members, line):
        super().__init__(name, line)
        self.members = members  # [(name, Val, line)]


class StructDef(Def):
    kind = 'struct'

    def __init__(self, name, fields, line):
        super().__init__(name, line)
        self.fields = fields


class Arm:
    def __init__(self, labels, decl):
        self.labels, self.decl = labels, decl


class UnionDef(Def):
    kind = 'union'

    def __init__(self, name, disc, arms, default, line):
        super().__init__(name, line)
        self.disc, self.arms, self.default = disc, arms, default


class Proc:
    def __init__(self, name, num, arg, res, line):
        self.name, self.num, self.arg, self.res, self.line = name, num, arg, res, line


class Version:
    def __init__(self, name, num, procs, line):
        self.name, self.num, self.procs, self.line = name, num, procs, line


class ProgramDef(Def):
    kind = 'program'

    def __init__(self, name, num, versions, line):
        super().__init__(name, line)
        self.num, self.versions = num, versions


# ------------------------------------------------------------------- lexer


class Tok:
    __slots__ = ('kind', 'text', 'line', 'num')

    def __init__(self, kind, text, line, num=None):
        self.kind, self.text, self.line, self.num = kind, text, line, num


ID_RE = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')
NUM_RE = re.compile(r'-?(0[xX][0-9a-fA-F]+|[0-9]+)(?![A-Za-z0-9_])')
PUNCT = set('{}()[]<>;,=*:')


def lex(path, text):
    toks, passthru = [], []
    i, n, line, bol = 0, len(text), 1, True
    while i < n:
        c = text[i]
        if c == '\n':
            line += 1
            i += 1
            bol = True
            continue
        if c in ' \t\r\f\v':
            i += 1
            continue
        if bol and c == '%':
            j = text.find('\n', i)
            j = n if j < 0 else j
            passthru.append((text[i + 1:j].rstrip('\r'), line))
            i = j
            continue
        if bol and c == '#':
            raise XdrError(path, line, 'C preprocessor lines are not supported '
                           '(pass text to the header with a %-line)')
        bol = False
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            if j < 0:
                raise XdrError(path, line, 'unterminated comment')
            line += text.count('\n', i, j)
            i = j + 2
            continue
        if text.startswith('//', i):
            j = text.find('\n', i)
            i = n if j < 0 else j
            continue
        m = NUM_RE.match(text, i)
        if m:
            s = m.group(0)
            body = s.lstrip('-')
            if body[:2].lower() == '0x':
                v = int(body, 16)
            elif len(body) > 1 and body[0] == '0':
                if not re.fullmatch(r'[0-7]+', body):
                    raise XdrError(path, line, f'bad octal number {s}')
                v = int(body, 8)
            else:
                v = int(body)
            toks.append(Tok('num', s, line, -v if s[0] == '-' else v))
            i = m.end()
            continue
        m = ID_RE.match(text, i)
        if m:
            toks.append(Tok('id', m.group(0), line))
            i = m.end()
            continue
        if c in PUNCT:
            toks.append(Tok('punct', c, line))
            i += 1
            continue
        if c == '-':
            raise XdrError(path, line, "'-' must be followed by a number")
        raise XdrError(path, line, f'unexpected character {c!r}')
    toks.append(Tok('eof', '<end of file>', line))
    return toks, passthru


# ------------------------------------------------------------------ parser


class Spec:
    """One parsed .x file."""

    def __init__(self, path):
        self.path = path
        self.base = os.path.splitext(os.path.basename(path))[0]
        self.defs = []        # in file order, hoisted anonymous types first
        self.passthru = []    # (text, line)
        self.includes = []    # (header name, line)
        self.imports = []     # Specs of included .x files


class Parser:
    def __init__(self, spec, toks):
        self.spec, self.toks, self.pos = spec, toks, 0

    def err(self, line, msg):
        return XdrError(self.spec.path, line, msg)

    def peek(self, k=0):
        return self.toks[min(self.pos + k, len(self.toks) - 1)]

    def next(self):
        t = self.toks[self.pos]
        if t.kind != 'eof':
            self.pos += 1
        return t

    def expect(self, text, what=None):
        t = self.next()
        if t.text != text or t.kind == 'num':
            raise self.err(t.line, f"expected '{text}'{' ' + what if what else ''}, got '{t.text}'")
        return t

    def accept(self, text):
        if self.peek().text == text and self.peek().kind != 'num':
            return self.next()
        return None

    def ident(self, what, keywords_ok=False):
        t = self.next()
        if t.kind != 'id' or (t.text in XDR_KEYWORDS and not keywords_ok):
            raise self.err(t.line, f"expected {what}, got '{t.text}'")
        return t.text, t.line

    def value(self, what='a number or constant name'):
        t = self.next()
        if t.kind == 'num':
            return Val(t.text, num=t.num, line=t.line)
        if t.kind == 'id' and t.text not in XDR_KEYWORDS:
            return Val(t.text, name=t.text, line=t.line)
        raise self.err(t.line, f"expected {what}, got '{t.text}'")

    # -- definitions

    def parse(self):
        while self.peek().kind != 'eof':
            t = self.next()
            if t.text == 'const':
                name, line = self.ident('a constant name')
                self.expect('=')
                v = self.value()
                self.expect(';', 'after the constant')
                self.add(ConstDef(name, v, line))
            elif t.text == 'typedef':
                d = self.declaration(None, typedef=True)
                self.expect(';', 'after the typedef')
                if isinstance(d.t, Void):
                    raise self.err(d.line, 'typedef of void')
                if isinstance(d.t, Anon):
                    # "typedef struct {...} name;" defines name itself.
                    self.name_anon(d.t.d, d.name, d.line)
                else:
                    d.t = self.hoist(d.t, d.name, d.line)
                    self.add(TypedefDef(d.name, d, d.line))
            elif t.text in ('struct', 'union', 'enum'):
                name, line = self.ident(f'a {t.text} name')
                if t.text == 'struct':
                    body = self.struct_body(line)
                elif t.text == 'union':
                    self.expect('switch', f'after union {name}')
                    body = self.union_body(line)
                else:
                    body = self.enum_body(line)
                t2 = self.next()
                if t2.text != ';':
                    hint = ' (declarations after a body are not RFC 4506)' if t2.kind == 'id' else ''
                    raise self.err(t2.line, f"expected ';' after the body of {t.text} {name}, "
                                   f"got '{t2.text}'{hint}")
                self.name_anon(body, name, line)
            elif t.text == 'program':
                self.program(t.line)
            else:
                raise self.err(t.line, f"expected a definition (const, typedef, enum, struct, "
                               f"union, program), got '{t.text}'")

    def add(self, d):
        d.spec = self.spec
        self.spec.defs.append(d)

    def name_anon(self, d, name, line):
        """Name an anonymous body, and its anonymous children after it."""
        d.name, d.line = name, line
        if isinstance(d, StructDef):
            for f in d.fields:
                f.t = self.hoist(f.t, f'{name}_{f.name}', f.line)
        elif isinstance(d, UnionDef):
            for a in d.arms:
                if a.decl.name:
                    a.decl.t = self.hoist(a.decl.t, f'{name}_{a.decl.name}', a.decl.line)
            if d.default and d.default.name:
                d.default.t = self.hoist(d.default.t, f'{name}_{d.default.name}', d.default.line)
        self.add(d)

    def hoist(self, t, name, line):
        if isinstance(t, Anon):
            self.name_anon(t.d, name, line)
            return Ref(name, line)
        if isinstance(t, (Fixed, VarArr, Opt)) and isinstance(t.elem, Anon):
            self.name_anon(t.elem.d, name, line)
            t.elem = Ref(name, line)
        return t

    def struct_body(self, line):
        self.expect('{', 'to open the struct body')
        fields = []
        while not self.accept('}'):
            d = self.declaration('struct')
            self.expect(';', 'after the struct member')
            if isinstance(d.t, Void):
                raise self.err(d.line, 'void is only allowed as a union arm')
            fields.append(d)
        if not fields:
            raise self.err(line, 'empty struct')
        return StructDef(None, fields, line)

    def union_body(self, line):
        self.expect('(', "after 'switch'")
        disc = self.declaration('union')
        self.expect(')', 'after the discriminant')
        if isinstance(disc.t, (Void, Anon)) or not isinstance(disc.t, (Prim, Ref)):
            raise self.err(disc.line, 'a union discriminant must be int, unsigned int, bool or an enum')
        self.expect('{', 'to open the union body')
        arms, default = [], None
        while not self.accept('}'):
            t = self.peek()
            if t.text == 'case':
                labels = []
                while self.accept('case'):
                    labels.append(self.value('a case value'))
                    self.expect(':', 'after the case value')
                if self.peek().text == 'default':
                    raise self.err(self.peek().line, 'default cannot share an arm with case labels')
                d = self.declaration('arm')
                self.expect(';', 'after the union arm')
                arms.append(Arm(labels, d))
            elif t.text == 'default':
                self.next()
                self.expect(':', "after 'default'")
                if default is not None:
                    raise self.err(t.line, 'second default arm')
                default = self.declaration('arm')
                self.expect(';', 'after the default arm')
            else:
                raise self.err(t.line, f"expected 'case', 'default' or '}}', got '{t.text}'")
        if not arms and default is None:
            raise self.err(line, 'union without arms')
        return UnionDef(None, disc, arms, default, line)

    def enum_body(self, line):
        self.expect('{', 'to open the enum body')
        members = []
        prev = None
        while True:
            name, mline = self.ident('an enumerator name')
            if self.accept('='):
                v = self.value()
            elif prev is None:
                v = Val('0', num=0, line=mline)
            elif prev.num is not None:
                v = Val(str(prev.num + 1), num=prev.num + 1, line=mline)
            else:
                raise self.err(mline, f'enumerator {name} needs an explicit value')
            members.append((name, v, mline))
            prev = v
            if self.accept(','):
                if self.peek().text == '}':
                    break
                continue
            break
        self.expect('}', 'to close the enum body')
        return EnumDef(None, members, line)

    def type_spec(self, in_proc=False):
        t = self.next()
        s = t.text
        if t.kind != 'id':
            raise self.err(t.line, f"expected a type, got '{s}'")
        if s == 'unsigned':
            n = self.peek().text
            if n in ('int', 'long'):
                self.next()
                return Prim('uint')
            if n == 'hyper':
                self.next()
                return Prim('uhyper')
            if n in ('char', 'short'):
                raise self.err(t.line, f'unsigned {n} is not an XDR type')
            return Prim('uint')
        if s in ('int', 'long'):
            return Prim('int')
        if s == 'hyper':
            return Prim('hyper')
        if s in ('float', 'double', 'bool'):
            return Prim(s)
        if s == 'quadruple':
            raise self.err(t.line, 'quadruple is not supported')
        if s in ('char', 'short'):
            raise self.err(t.line, f'{s} is not an XDR type')
        if s in ('struct', 'union', 'enum'):
            if in_proc and self.peek().text in ('{', 'switch'):
                raise self.err(t.line, 'anonymous types are not allowed in procedure definitions')
            if s == 'struct' and self.peek().text == '{':
                return Anon(self.struct_body(t.line))
            if s == 'union' and self.peek().text == 'switch':
                self.next()
                return Anon(self.union_body(t.line))
            if s == 'enum' and self.peek().text == '{':
                return Anon(self.enum_body(t.line))
            name, line = self.ident(f'a {s} name')
            return Ref(name, line, tag=s)
        if s == 'string' and in_proc:
            return String(None)
        if s in XDR_KEYWORDS:
            raise self.err(t.line, f"expected a type, got '{s}'")
        if s in BUILTIN_TYPEDEFS:
            return Prim(BUILTIN_TYPEDEFS[s])
        return Ref(s, t.line)

    def declaration(self, owner, typedef=False):
        t = self.peek()
        line = t.line
        if t.text == 'void' and owner == 'arm':
            self.next()
            return Decl(None, Void(), line)
        if t.text == 'void':
            raise self.err(line, 'void is only allowed as a union arm or procedure argument')
        if t.text == 'opaque':
            self.next()
            name, line = self.decl_name(typedef)
            if self.accept('['):
                v = self.value('an array size')
                self.expect(']')
                return Decl(name, OpaqueFixed(v), line)
            if self.accept('<'):
                v = None if self.peek().text == '>' else self.value('a bound')
                self.expect('>')
                return Decl(name, OpaqueVar(v), line)
            raise self.err(line, f'opaque {name} needs a size [n] or a bound <n>')
        if t.text == 'string':
            self.next()
            name, line = self.decl_name(typedef)
            if self.accept('<'):
                v = None if self.peek().text == '>' else self.value('a bound')
                self.expect('>')
                return Decl(name, String(v), line)
            raise self.err(line, f'string {name} needs a bound <n> or <>')
        ts = self.type_spec()
        if self.accept('*'):
            name, line = self.decl_name(typedef)
            return Decl(name, Opt(ts), line)
        name, line = self.decl_name(typedef)
        if self.accept('['):
            v = self.value('an array size')
            self.expect(']')
            return Decl(name, Fixed(ts, v), line)
        if self.accept('<'):
            v = None if self.peek().text == '>' else self.value('a bound')
            self.expect('>')
            return Decl(name, VarArr(ts, v), line)
        return Decl(name, ts, line)

    def decl_name(self, typedef):
        if typedef:
            return self.ident('a type name')
        return self.ident('a member name', keywords_ok=True)

    def program(self, line):
        pname, pline = self.ident('a program name')
        self.expect('{', 'to open the program')
        versions = []
        while not self.accept('}'):
            self.expect('version', 'in the program body')
            vname, vline = self.ident('a version name')
            self.expect('{', 'to open the version')
            procs = []
            while not self.accept('}'):
                res = None if self.accept('void') else self.type_spec(in_proc=True)
                name, pl = self.ident('a procedure name')
                self.expect('(', 'after the procedure name')
                arg = None if self.accept('void') else self.type_spec(in_proc=True)
                if self.peek().text == ',':
                    raise self.err(self.peek().line, 'procedures with more than one argument are not supported')
                self.expect(')', 'after the procedure argument')
                self.expect('=')
                num = self.value('a procedure number')
                self.expect(';', 'after the procedure')
                for x in (res, arg):
                    if isinstance(x, Anon):
                        raise self.err(pl, 'anonymous types are not allowed in procedure definitions')
                procs.append(Proc(name, num, arg, res, pl))
            if not procs:
                raise self.err(vline, f'version {vname} has no procedures')
            self.expect('=')
            vnum = self.value('a version number')
            self.expect(';', 'after the version')
            versions.append(Version(vname, vnum, procs, vline))
        if not versions:
            raise self.err(pline, f'program {pname} has no versions')
        self.expect('=')
        num = self.value('a program number')
        self.expect(';', 'after the program')
        self.add(ProgramDef(pname, num, versions, pline))


INCLUDE_RE = re.compile(r'\s*#\s*include\s*[<"]([^>"]+)[>"]')


def parse_file(path, include_dirs, seen):
    try:
        with open(path, encoding='utf-8') as f:
            text = f.read()
    except OSError as e:
        raise XdrError(path, 0, f'cannot read: {e.strerror}')
    spec = Spec(path)
    toks, spec.passthru = lex(path, text)
    Parser(spec, toks).parse()
    seen[os.path.realpath(path)] = spec
    for txt, line in spec.passthru:
        m = INCLUDE_RE.match(txt)
        if not m:
            continue
        hdr = m.group(1)
        spec.includes.append((hdr, line))
        stem = os.path.splitext(os.path.basename(hdr))[0]
        for d in include_dirs:
            cand = os.path.join(d, stem + '.x')
            if os.path.isfile(cand):
                real = os.path.realpath(cand)
                if real == os.path.realpath(path):
                    break
                if real not in seen:
                    parse_file(cand, include_dirs, seen)
                spec.imports.append(seen[real])
                break
    return spec


# --------------------------------------------------------------- analysis


class Ext:
    """A type declared by an included header we know nothing about."""

    def __init__(self, name):
        self.name = name
        self.kind = 'external'


def c_number(v, text, line, path):
    """C literal for an integer constant (as written), typed to keep its value."""
    if v == -2**63:
        return '(-0x7fffffffffffffffll - 1)'
    if -2**31 <= v < 2**31:
        suffix = ''
    elif 0 <= v < 2**32:
        suffix = 'u'
    elif -2**63 <= v < 2**63:
        suffix = 'll'
    elif 0 <= v < 2**64:
        suffix = 'ull'
    else:
        raise XdrError(path, line, f'constant {text} does not fit in 64 bits')
    if v < 0 and -2**31 <= v:
        # -2147483648 is "- 2147483648": a long; spell the int minimum.
        return f'({text})' if v != -2**31 else '(-0x7fffffff - 1)'
    return f'({text}{suffix})' if v < 0 else text + suffix


class Gen:
    def __init__(self, spec):
        self.spec = spec
        self.path = spec.path
        self.specs = []
        self.collect_specs(spec)
        self.types = {}      # name -> Def
        self.consts = {}     # name -> ConstDef
        self.enumers = {}    # enumerator -> (EnumDef, Val)
        self.pnames = {}     # program/version/procedure name -> (Val, line, spec)
        self.owner = {}      # global name -> (spec, line)
        self.builtin_skipped = set()
        for s in self.specs:
            self.register(s)
        self.field_cache = {}
        self.minwire_memo = {}
        self.validate()
        self.compute_scc()

    def collect_specs(self, s):
        if s in self.specs:
            return
        for i in s.imports:
            self.collect_specs(i)
        self.specs.append(s)

    def err(self, line, msg, spec=None):
        return XdrError((spec or self.spec).path, line, msg)

    def claim(self, name, spec, line, what):
        if name in self.owner:
            os_, ol = self.owner[name]
            raise self.err(line, f"'{name}' is already defined at {os_.path}:{ol}", spec)
        self.owner[name] = (spec, line)

    def register(self, s):
        for d in s.defs:
            if isinstance(d, ConstDef):
                self.claim(d.name, s, d.line, 'constant')
                self.consts[d.name] = d
            elif isinstance(d, ProgramDef):
                self.claim_pname(d.name, d.num, d.line, s)
                for v in d.versions:
                    self.claim_pname(v.name, v.num, v.line, s)
                    for p in v.procs:
                        self.claim_pname(p.name, p.num, p.line, s)
            else:
                if isinstance(d, TypedefDef) and d.name in BUILTIN_TYPEDEFS:
                    want = BUILTIN_TYPEDEFS[d.name]
                    if not (isinstance(d.decl.t, Prim) and d.decl.t.kind == want):
                        raise self.err(d.line, f'{d.name} must be a typedef of {PRIM_XDR[want]}', s)
                    self.builtin_skipped.add(d)
                    continue
                if isinstance(d, TypedefDef) and d.name in RUNTIME_ALIASES:
                    want = RUNTIME_ALIASES[d.name]
                    t = d.decl.t
                    if not (isinstance(t, Prim) and t.kind == want):
                        raise self.err(d.line, f'{d.name} must be a typedef of {PRIM_XDR[want]} '
                                       f'(its codecs are the runtime xdr_dec_{d.name}/xdr_enc_{d.name})', s)
                self.claim(d.name, s, d.line, 'type')
                self.types[d.name] = d
                if isinstance(d, EnumDef):
                    for m, v, ml in d.members:
                        self.claim(m, s, ml, 'enumerator')
                        self.enumers[m] = (d, v)

    def claim_pname(self, name, val, line, s):
        if name in self.pnames:
            ov, ol, os_ = self.pnames[name]
            a, b = self.num_of(ov, os_, quiet=True), self.num_of(val, s, quiet=True)
            if a is not None and a == b:
                return
            raise self.err(line, f"'{name}' is already defined at {os_.path}:{ol} with another value", s)
        self.claim(name, s, line, 'program name')
        self.pnames[name] = (val, line, s)

    # -- values

    def num_of(self, v, spec=None, quiet=False, _seen=None):
        """Numeric value of a Val, or None when it names something external."""
        if v is None:
            return None
        if v.num is not None:
            return v.num
        n = v.name
        if n in ('TRUE', 'FALSE') and n not in self.consts and n not in self.enumers:
            return 1 if n == 'TRUE' else 0
        _seen = _seen or set()
        if n in _seen:
            raise self.err(v.line, f'constant {n} is defined in terms of itself', spec)
        _seen.add(n)
        if n in self.consts:
            c = self.consts[n]
            return self.num_of(c.val, c.spec, quiet, _seen)
        if n in self.enumers:
            e, ev = self.enumers[n]
            return self.num_of(ev, e.spec, quiet, _seen)
        if n in self.pnames:
            pv, _, ps = self.pnames[n]
            return self.num_of(pv, ps, quiet, _seen)
        if quiet or (spec or self.spec).passthru:
            return None
        raise self.err(v.line, f"unknown constant '{n}'", spec)

    def cval(self, v):
        """C expression for a Val."""
        if v.num is not None:
            return c_number(v.num, v.text, v.line, self.path)
        if v.name in ('TRUE', 'FALSE') and v.name not in self.consts and v.name not in self.enumers:
            return '1' if v.name == 'TRUE' else '0'
        return cglobal(v.name)

    def cfield(self, name, spec):
        """C spelling of a member name of a type defined in spec."""
        key = (name, spec)
        if key not in self.field_cache:
            c = name + '_' if name in FIELD_RESERVED else name
            # A #define of the same name (from spec or its imports) would
            # replace the member name.
            if c in self.defined_names(spec):
                c += '_'
            self.field_cache[key] = c
        return self.field_cache[key]

    def defined_names(self, spec):
        if not hasattr(spec, '_defined'):
            names = set()
            stack, seen = [spec], set()
            while stack:
                s = stack.pop()
                if s in seen:
                    continue
                seen.add(s)
                stack.extend(s.imports)
                for d in s.defs:
                    if isinstance(d, ConstDef):
                        names.add(cglobal(d.name))
                    elif isinstance(d, ProgramDef):
                        names.add(cglobal(d.name))
                        for v in d.versions:
                            names.add(cglobal(v.name))
                            names.update(cglobal(p.name) for p in v.procs)
            spec._defined = names
        return spec._defined

    # -- types

    def lookup(self, ref):
        d = self.types.get(ref.name)
        if d is None:
            return Ext(ref.name)
        return d

    def resolve(self, t):
        """Follow typedef names: returns a type expression, a Def or an Ext."""
        seen = set()
        while isinstance(t, Ref):
            d = self.lookup(t)
            if not isinstance(d, TypedefDef):
                return d
            if d.name in seen:
                raise self.err(d.line, f'typedef {d.name} refers to itself', d.spec)
            seen.add(d.name)
            t = d.decl.t
        return t

    def alias_target(self, name):
        """A type name with plain typedef aliases followed."""
        seen = set()
        while True:
            d = self.types.get(name)
            if isinstance(d, TypedefDef) and isinstance(d.decl.t, Ref) and name not in seen:
                seen.add(name)
                name = d.decl.t.name
                continue
            return name

    def is_size0(self, t):
        return isinstance(t, (Fixed, OpaqueFixed)) and self.num_of(t.size, quiet=True) == 0

    def refs_of(self, d):
        """Type names a definition mentions."""
        out = []

        def walk(t):
            if isinstance(t, Ref):
                out.append(t.name)
            elif isinstance(t, (Fixed, VarArr, Opt)):
                walk(t.elem)
        if isinstance(d, TypedefDef):
            walk(d.decl.t)
        elif isinstance(d, StructDef):
            for f in d.fields:
                walk(f.t)
        elif isinstance(d, UnionDef):
            walk(d.disc.t)
            for a in d.arms:
                walk(a.decl.t)
            if d.default:
                walk(d.default.t)
        return out

    def validate(self):
        for s in self.specs:
            for d in s.defs:
                if d in self.builtin_skipped:
                    continue
                self.validate_def(d, s)

    def check_val(self, v, spec, what, nonneg=True, u32=True):
        n = self.num_of(v, spec)
        if n is None:
            return
        if nonneg and n < 0:
            raise self.err(v.line, f'{what} must not be negative', spec)
        if u32 and n > 0xffffffff:
            raise self.err(v.line, f'{what} does not fit in 32 bits', spec)

    def check_type(self, t, spec, line, where):
        if isinstance(t, Ref):
            d = self.types.get(t.name)
            if d is None:
                if not spec.passthru:
                    raise self.err(t.line, f"unknown type '{t.name}'", spec)
            elif t.tag and d.kind != t.tag:
                raise self.err(t.line, f"'{t.name}' is a {d.kind}, not a {t.tag}", spec)
        elif isinstance(t, (Fixed, OpaqueFixed)):
            self.check_val(t.size, spec, 'an array size')
            if isinstance(t, Fixed):
                self.check_elem(t.elem, spec, line)
        elif isinstance(t, VarArr):
            if t.max is not None:
                self.check_val(t.max, spec, 'a bound')
            self.check_elem(t.elem, spec, line)
        elif isinstance(t, (OpaqueVar, String)):
            if t.max is not None:
                self.check_val(t.max, spec, 'a bound')
        elif isinstance(t, Opt):
            self.check_elem(t.elem, spec, line)

    def check_elem(self, t, spec, line):
        self.check_type(t, spec, line, 'element')

    def validate_def(self, d, s):
        if isinstance(d, ConstDef):
            n = self.num_of(d.val, s)
            if n is not None and not (-2**63 <= n < 2**64):
                raise self.err(d.line, f'constant {d.name} does not fit in 64 bits', s)
            return
        if isinstance(d, ProgramDef):
            self.check_val(d.num, s, 'a program number')
            vnums = {}
            for v in d.versions:
                self.check_val(v.num, s, 'a version number')
                vn = self.num_of(v.num, s)
                if vn is not None and vn in vnums:
                    raise self.err(v.line, f'version number {vn} used twice', s)
                vnums[vn] = v
                pnums = {}
                for p in v.procs:
                    self.check_val(p.num, s, 'a procedure number')
                    pn = self.num_of(p.num, s)
                    if pn is None:
                        raise self.err(p.line, 'procedure numbers must be known here', s)
                    if pn > 65535:
                        raise self.err(p.line, f'procedure number {pn} is too large for a table', s)
                    if pn in pnums:
                        raise self.err(p.line, f'procedure number {pn} used twice', s)
                    pnums[pn] = p
                    for x in (p.arg, p.res):
                        if x is not None:
                            self.check_type(x, s, p.line, 'procedure')
            return
        cn = cglobal(d.name)
        if cn != d.name and cn in self.owner:
            raise self.err(d.line, f"'{d.name}' is spelled '{cn}' in C, which clashes with "
                           f"another definition", s)
        if isinstance(d, TypedefDef):
            self.check_type(d.decl.t, s, d.line, 'typedef')
            if self.is_size0(d.decl.t):
                raise self.err(d.line, f'typedef {d.name} has size zero', s)
        elif isinstance(d, EnumDef):
            for m, v, ml in d.members:
                n = self.num_of(v, s)
                self.check_val(v, s, 'an enumerator', nonneg=False, u32=True)
                if n is not None and not (-2**31 <= n < 2**32):
                    raise self.err(ml, f'enumerator {m} does not fit in 32 bits', s)
        elif isinstance(d, StructDef):
            names = {}
            for f in d.fields:
                self.check_type(f.t, s, f.line, 'member')
                c = self.cfield(f.name, s)
                if c in names:
                    raise self.err(f.line, f"member '{f.name}' clashes with the one at line {names[c]}", s)
                names[c] = f.line
        elif isinstance(d, UnionDef):
            self.check_type(d.disc.t, s, d.disc.line, 'discriminant')
            dt = self.resolve(d.disc.t)
            ok = (isinstance(dt, Prim) and dt.kind in ('int', 'uint', 'bool')) or \
                isinstance(dt, (EnumDef, Ext))
            if not ok:
                raise self.err(d.disc.line, 'a union discriminant must be int, unsigned int, bool or an enum', s)
            names = {}
            vals = {}
            for a in d.arms + ([Arm([], d.default)] if d.default else []):
                for lab in a.labels:
                    n = self.num_of(lab, s)
                    key = n if n is not None else ('name', lab.name)
                    if key in vals:
                        raise self.err(lab.line, f'case {lab.text} repeats the one at line {vals[key]}', s)
                    vals[key] = lab.line
                    if isinstance(dt, Prim) and dt.kind == 'bool' and n is not None and n not in (0, 1):
                        raise self.err(lab.line, f'case {lab.text} is not a bool value', s)
                if a.decl.name is None:
                    continue
                self.check_type(a.decl.t, s, a.decl.line, 'arm')
                c = self.cfield(a.decl.name, s)
                if c in names:
                    raise self.err(a.decl.line, f"arm '{a.decl.name}' clashes with the one at line {names[c]}", s)
                names[c] = a.decl.line

    def compute_scc(self):
        """Strongly connected components of the type graph (for recursion)."""
        graph = {n: [r for r in self.refs_of(d) if r in self.types] for n, d in self.types.items()}
        index, low, on, stack, comp = {}, {}, set(), [], {}
        counter = [0]
        for root in graph:
            if root in index:
                continue
            work = [(root, 0)]
            while work:
                v, i = work.pop()
                if i == 0:
                    index[v] = low[v] = counter[0]
                    counter[0] += 1
                    stack.append(v)
                    on.add(v)
                recurse = False
                succ = graph[v]
                while i < len(succ):
                    w = succ[i]
                    i += 1
                    if w not in index:
                        work.append((v, i))
                        work.append((w, 0))
                        recurse = True
                        break
                    if w in on:
                        low[v] = min(low[v], index[w])
                if recurse:
                    continue
                if low[v] == index[v]:
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp[w] = v
                        if w == v:
                            break
                if work:
                    u = work[-1][0]
                    low[u] = min(low[u], low[v])
        self.scc = comp
        self.self_loop = {n for n, succ in graph.items() if n in succ}

    def recursive(self, owner, elem):
        """Can a value of elem contain a value of owner (so nesting is unbounded)?"""
        if not isinstance(elem, Ref) or elem.name not in self.types or owner not in self.types:
            return False
        return self.scc.get(elem.name) == self.scc.get(owner)

    def list_next(self, sd):
        """The last member if it is an optional pointer to sd itself (a list)."""
        mem = self.members(sd)
        if not mem:
            return None
        last = mem[-1]
        t = self.resolve(last.t)
        if isinstance(t, Opt) and isinstance(t.elem, Ref) and self.alias_target(t.elem.name) == sd.name:
            return last
        return None

    def minwire(self, t):
        """Smallest encoding of t, in bytes (a lower bound when unknown)."""
        if isinstance(t, Prim):
            return PRIM_WIRE[t.kind]
        if isinstance(t, Ref):
            d = self.lookup(t)
            if isinstance(d, Ext):
                return 0
            return self.minwire_def(d)
        if isinstance(t, Fixed):
            n = self.num_of(t.size, quiet=True)
            return 0 if n is None else n * self.minwire(t.elem)
        if isinstance(t, OpaqueFixed):
            n = self.num_of(t.size, quiet=True)
            return 0 if n is None else (n + 3) & ~3
        if isinstance(t, (VarArr, OpaqueVar, String, Opt)):
            return 4
        return 0

    def minwire_def(self, d):
        if d.name in self.minwire_memo:
            return self.minwire_memo[d.name]
        self.minwire_memo[d.name] = 0  # cycles only pass through pointers
        if isinstance(d, EnumDef):
            n = 4
        elif isinstance(d, TypedefDef):
            n = self.minwire(d.decl.t)
        elif isinstance(d, StructDef):
            n = sum(self.minwire(f.t) for f in d.fields)
        elif isinstance(d, UnionDef):
            arms = [self.minwire(a.decl.t) for a in d.arms]
            if d.default:
                arms.append(self.minwire(d.default.t))
            n = self.minwire(d.disc.t) + min(arms)
        else:
            n = 0
        self.minwire_memo[d.name] = n
        return n

    # -- C spellings

    def ctype(self, t):
        if isinstance(t, Prim):
            return PRIM_C[t.kind]
        if isinstance(t, Ref):
            return cglobal(t.name)
        if isinstance(t, String):
            return 'xdr_string'
        raise AssertionError(t)

    def cdecl(self, t, name):
        """C declarator of a member or typedef."""
        if isinstance(t, (Prim, Ref)):
            return f'{self.ctype(t)} {name}'
        if isinstance(t, Fixed):
            return f'{self.ctype(t.elem)} {name}[{self.cval(t.size)}]'
        if isinstance(t, VarArr):
            return f'struct {{ uint32_t len; {self.ctype(t.elem)} *val; }} {name}'
        if isinstance(t, OpaqueFixed):
            return f'uint8_t {name}[{self.cval(t.size)}]'
        if isinstance(t, OpaqueVar):
            return f'xdr_opaque {name}'
        if isinstance(t, String):
            return f'xdr_string {name}'
        if isinstance(t, Opt):
            return f'{self.ctype(t.elem)} *{name}'
        raise AssertionError(t)

    def cbound(self, t):
        if t.max is not None:
            return self.cval(t.max)
        return 'XDR_MAX_ARRAY_DEFAULT' if isinstance(t, VarArr) else 'XDR_MAX_OPAQUE_DEFAULT'

    def has_codecs(self, d):
        """False for types whose codecs are runtime functions (uint32 etc.)."""
        return not (isinstance(d, TypedefDef) and d.name in RUNTIME_ALIASES)

    def local_types(self):
        return [d for d in self.spec.defs
                if isinstance(d, (TypedefDef, StructDef, UnionDef, EnumDef))
                and d not in self.builtin_skipped]

    def members(self, d):
        """Members that exist in C (void arms and size-zero arrays do not)."""
        if isinstance(d, StructDef):
            return [f for f in d.fields if not self.is_size0(f.t)]
        arms = [a.decl for a in d.arms]
        if d.default:
            arms.append(d.default)
        return [a for a in arms if a.name is not None and not self.is_size0(a.t)]


# ---------------------------------------------------------- code emission


class Fn:
    """Body of one generated C function."""

    def __init__(self, owner):
        self.owner = owner
        self.lines = []
        self.need = set()
        self.loops = 0

    def __call__(self, ind, s):
        self.lines.append('\t' * ind + s)


def deref_inner(lv):
    """X for an lvalue written (*X), else None."""
    if lv.startswith('(*') and lv.endswith(')'):
        inner, depth = lv[2:-1], 0
        for ch in inner:
            depth += ch == '('
            depth -= ch == ')'
            if depth < 0:
                return None
        return inner if depth == 0 else None
    return None


def addr(lv):
    inner = deref_inner(lv)
    return inner if inner is not None else '&' + lv


def member(lv, m):
    inner = deref_inner(lv)
    return f'{inner}->{m}' if inner is not None else f'{lv}.{m}'


def call(fn, ind, expr):
    fn.need.add('err')
    fn(ind, f'err = {expr};')
    fn(ind, 'if (err)')
    fn(ind + 1, 'return err;')


def finish(fn, proto, ret='return 0;'):
    """Assemble a function; a body that is a single call returns it directly."""
    body = fn.lines
    if (ret == 'return 0;' and len(body) >= 3 and body[-3].startswith('\terr = ')
            and body[-2] == '\tif (err)' and body[-1] == '\t\treturn err;'):
        # Tail call: "err = f(); if (err) return err; return 0;" is "return f();".
        ret = 'return ' + body[-3][len('\terr = '):]
        body = body[:-3]
        if not any('err' in line for line in body):
            fn.need.discard('err')
    if not body:
        # Nothing on the wire: keep -Wunused-parameter quiet.
        body = ['\t(void)' + a + ';' for a in re.findall(r'\*(\w+)[,)]', proto)]
    decls = []
    if 'err' in fn.need:
        decls.append('\tint err;')
    if 'p' in fn.need:
        decls.append('\tvoid *p;')
    if 'more' in fn.need:
        decls.append('\tbool more;')
    out = [proto, '{'] + decls
    if decls:
        out.append('')
    out += body
    if ret:
        out.append('\t' + ret)
    out += ['}', '']
    return out


class Emitter:
    def __init__(self, g):
        self.g = g
        self.spec = g.spec

    # ---------------------------------------------------------- decoders

    def inline_typedef(self, d):
        t = d.decl.t
        return isinstance(t, (Prim, Ref, OpaqueFixed, OpaqueVar, String))

    def dec(self, fn, t, lv, ind):
        g = self.g
        if isinstance(t, Void) or g.is_size0(t):
            return
        if isinstance(t, Prim):
            call(fn, ind, f'xdr_dec_{PRIM_CODEC[t.kind]}(d, {addr(lv)})')
        elif isinstance(t, Ref):
            d = g.lookup(t)
            if isinstance(d, EnumDef):
                call(fn, ind, f'xdr_dec_enum(d, {addr(lv)})')
            elif isinstance(d, TypedefDef) and self.inline_typedef(d):
                self.dec(fn, d.decl.t, lv, ind)
            else:
                call(fn, ind, f'xdr_dec_{cglobal(t.name)}(d, {addr(lv)})')
        elif isinstance(t, Fixed):
            i = f'i{fn.loops}'
            fn.loops += 1
            fn(ind, f'for (uint32_t {i} = 0; {i} < {g.cval(t.size)}; {i}++) {{')
            self.dec(fn, t.elem, f'{lv}[{i}]', ind + 1)
            fn(ind, '}')
            fn.loops -= 1
        elif isinstance(t, VarArr):
            fn.need.add('p')
            call(fn, ind, f'xdr_dec_array(d, &{member(lv, "len")}, &p, {g.cbound(t)}, '
                 f'sizeof(*{member(lv, "val")}), {g.minwire(t.elem)})')
            fn(ind, f'{member(lv, "val")} = p;')
            rec = g.recursive(fn.owner, t.elem)
            if rec:
                fn(ind, 'if (++d->depth > XDR_MAX_DEPTH)')
                fn(ind + 1, 'return -EBADMSG;')
            i = f'i{fn.loops}'
            fn.loops += 1
            fn(ind, f'for (uint32_t {i} = 0; {i} < {member(lv, "len")}; {i}++) {{')
            self.dec(fn, t.elem, f'{member(lv, "val")}[{i}]', ind + 1)
            fn(ind, '}')
            fn.loops -= 1
            if rec:
                fn(ind, 'd->depth--;')
        elif isinstance(t, OpaqueFixed):
            call(fn, ind, f'xdr_dec_opaque_fixed(d, {lv}, {g.cval(t.size)})')
        elif isinstance(t, OpaqueVar):
            call(fn, ind, f'xdr_dec_opaque(d, {addr(lv)}, {g.cbound(t)})')
        elif isinstance(t, String):
            call(fn, ind, f'xdr_dec_string(d, {addr(lv)}, {g.cbound(t)})')
        elif isinstance(t, Opt):
            fn.need.add('more')
            call(fn, ind, 'xdr_dec_bool(d, &more)')
            fn(ind, 'if (more) {')
            fn(ind + 1, 'if (++d->depth > XDR_MAX_DEPTH)')
            fn(ind + 2, 'return -EBADMSG;')
            fn(ind + 1, f'{lv} = xdr_dec_alloc(d, sizeof(*{lv}));')
            fn(ind + 1, f'if (!{lv})')
            fn(ind + 2, 'return -ENOMEM;')
            self.dec(fn, t.elem, f'(*{lv})', ind + 1)
            fn(ind + 1, 'd->depth--;')
            fn(ind, '} else {')
            fn(ind + 1, f'{lv} = NULL;')
            fn(ind, '}')
        else:
            raise AssertionError(t)

    # ---------------------------------------------------------- encoders

    def enc(self, fn, t, lv, ind, checked=True):
        g = self.g
        if isinstance(t, Void) or g.is_size0(t):
            return
        if isinstance(t, Prim):
            call(fn, ind, f'xdr_enc_{PRIM_CODEC[t.kind]}(e, {lv})')
        elif isinstance(t, Ref):
            d = g.lookup(t)
            if isinstance(d, EnumDef):
                call(fn, ind, f'xdr_enc_enum(e, {lv})')
            elif isinstance(d, TypedefDef) and self.inline_typedef(d):
                self.enc(fn, d.decl.t, lv, ind, checked)
            else:
                call(fn, ind, f'xdr_enc_{cglobal(t.name)}(e, {addr(lv)})')
        elif isinstance(t, Fixed):
            i = f'i{fn.loops}'
            fn.loops += 1
            fn(ind, f'for (uint32_t {i} = 0; {i} < {g.cval(t.size)}; {i}++) {{')
            self.enc(fn, t.elem, f'{lv}[{i}]', ind + 1)
            fn(ind, '}')
            fn.loops -= 1
        elif isinstance(t, VarArr):
            if checked:
                call(fn, ind, f'xdr_enc_array_len(e, {member(lv, "len")}, {g.cbound(t)})')
            else:
                call(fn, ind, f'xdr_enc_uint32(e, {member(lv, "len")})')
            i = f'i{fn.loops}'
            fn.loops += 1
            fn(ind, f'for (uint32_t {i} = 0; {i} < {member(lv, "len")}; {i}++) {{')
            self.enc(fn, t.elem, f'{member(lv, "val")}[{i}]', ind + 1)
            fn(ind, '}')
            fn.loops -= 1
        elif isinstance(t, OpaqueFixed):
            call(fn, ind, f'xdr_enc_opaque_fixed(e, {lv}, {g.cval(t.size)})')
        elif isinstance(t, (OpaqueVar, String)):
            kind = 'opaque' if isinstance(t, OpaqueVar) else 'string'
            if checked:
                call(fn, ind, f'xdr_enc_{kind}(e, {addr(lv)}, {g.cbound(t)})')
            else:
                call(fn, ind, f'xdr_enc_uint32(e, {member(lv, "len")})')
                call(fn, ind, f'xdr_enc_bytes(e, {member(lv, "val")}, {member(lv, "len")})')
                call(fn, ind, f'xdr_enc_pad(e, {member(lv, "len")})')
        elif isinstance(t, Opt):
            call(fn, ind, f'xdr_enc_bool(e, {lv} != NULL)')
            fn(ind, f'if ({lv}) {{')
            self.enc(fn, t.elem, f'(*{lv})', ind + 1)
            fn(ind, '}')
        else:
            raise AssertionError(t)

    # ------------------------------------------------------- per type

    def disc_switch(self, u, lv):
        g = self.g
        dt = g.resolve(u.disc.t)
        if isinstance(dt, Prim) and dt.kind == 'bool':
            return f'(int){lv}'
        return lv

    def codec_dec(self, d):
        g = self.g
        cn = cglobal(d.name)
        proto = f'int xdr_dec_{cn}(struct xdr_dec *d, {cn} *v)'
        fn = Fn(d.name)
        if isinstance(d, EnumDef):
            call(fn, 1, 'xdr_dec_enum(d, v)')
        elif isinstance(d, TypedefDef):
            self.dec(fn, d.decl.t, '(*v)', 1)
        elif isinstance(d, StructDef):
            nxt = g.list_next(d)
            if nxt is None:
                for f in g.members(d):
                    self.dec(fn, f.t, f'v->{g.cfield(f.name, d.spec)}', 1)
            else:
                # A list: iterate instead of recursing on the tail.
                nn = g.cfield(nxt.name, d.spec)
                fn.need.add('more')
                fn(1, 'for (;;) {')
                for f in g.members(d)[:-1]:
                    self.dec(fn, f.t, f'v->{g.cfield(f.name, d.spec)}', 2)
                call(fn, 2, 'xdr_dec_bool(d, &more)')
                fn(2, 'if (!more) {')
                fn(3, f'v->{nn} = NULL;')
                fn(3, 'return 0;')
                fn(2, '}')
                fn(2, f'v->{nn} = xdr_dec_alloc(d, sizeof(*v->{nn}));')
                fn(2, f'if (!v->{nn})')
                fn(3, 'return -ENOMEM;')
                fn(2, f'v = v->{nn};')
                fn(1, '}')
                return finish(fn, proto, ret=None)
        elif isinstance(d, UnionDef):
            dn = self.disc_name(d)
            self.dec(fn, d.disc.t, f'v->{dn}', 1)
            fn(1, f'switch ({self.disc_switch(d, "v->" + dn)}) {{')
            for a in d.arms:
                for lab in a.labels:
                    fn(1, f'case {g.cval(lab)}:')
                self.arm(fn, d, a.decl, self.dec)
            fn(1, 'default:')
            if d.default:
                self.arm(fn, d, d.default, self.dec)
            else:
                fn(2, 'return -EBADMSG;')
            fn(1, '}')
        return finish(fn, proto)

    def arm(self, fn, u, decl, how):
        if decl.name is not None:
            how(fn, decl.t, f'v->u.{self.g.cfield(decl.name, u.spec)}', 2)
        fn(2, 'break;')

    def disc_name(self, u):
        n = self.g.cfield(u.disc.name, u.spec)
        return n + '_' if n == 'u' else n

    def codec_enc(self, d):
        g = self.g
        cn = cglobal(d.name)
        proto = f'int xdr_enc_{cn}(struct xdr_enc *e, const {cn} *v)'
        fn = Fn(d.name)
        if isinstance(d, EnumDef):
            call(fn, 1, 'xdr_enc_enum(e, *v)')
        elif isinstance(d, TypedefDef):
            self.enc(fn, d.decl.t, '(*v)', 1)
        elif isinstance(d, StructDef):
            nxt = g.list_next(d)
            if nxt is None:
                for f in g.members(d):
                    self.enc(fn, f.t, f'v->{g.cfield(f.name, d.spec)}', 1)
            else:
                nn = g.cfield(nxt.name, d.spec)
                fn(1, 'for (;;) {')
                for f in g.members(d)[:-1]:
                    self.enc(fn, f.t, f'v->{g.cfield(f.name, d.spec)}', 2)
                call(fn, 2, f'xdr_enc_bool(e, v->{nn} != NULL)')
                fn(2, f'if (!v->{nn})')
                fn(3, 'return 0;')
                fn(2, f'v = v->{nn};')
                fn(1, '}')
                return finish(fn, proto, ret=None)
        elif isinstance(d, UnionDef):
            dn = self.disc_name(d)
            self.enc(fn, d.disc.t, f'v->{dn}', 1)
            fn(1, f'switch ({self.disc_switch(d, "v->" + dn)}) {{')
            for a in d.arms:
                for lab in a.labels:
                    fn(1, f'case {g.cval(lab)}:')
                self.arm(fn, d, a.decl, self.enc)
            fn(1, 'default:')
            if d.default:
                self.arm(fn, d, d.default, self.enc)
            else:
                fn(2, 'return xdr_enc_error(e, -EBADMSG);')
            fn(1, '}')
        return finish(fn, proto)

    # ------------------------------------------------------------ header

    def header(self):
        g, s = self.g, self.spec
        guard = f'BRAID_XDR_{c_ident(s.base).upper()}_H'
        o = [f'/* Generated by tools/xdrgen.py from {os.path.basename(s.path)}: do not edit. */',
             '/*',
             ' * Each type T of the .x file is a C type T with',
             ' *   int xdr_dec_T(struct xdr_dec *, T *);        0 or -errno',
             ' *   int xdr_enc_T(struct xdr_enc *, const T *);  0 or -errno (also in e->err)',
             ' * enum: int32_t plus the enumerators; struct: the members; union:',
             ' * the discriminant and the arms in member u (void arms have none);',
             ' * T x<N>: struct { uint32_t len; T *val; }; opaque<N>, string<N>:',
             ' * xdr_opaque (pointing into the decoded buffer); T *x: NULL or one T.',
             ' * Member names that are C keywords or macros get a trailing _.',
             ' * See nfsd/xdr.h for bounds, arenas and the encoder.',
             ' */',
             f'#ifndef {guard}', f'#define {guard}', '', '#include "nfsd/xdr.h"']
        if s.passthru:
            o.append('')
            o += [txt for txt, _ in s.passthru]
        consts = [d for d in s.defs if isinstance(d, ConstDef)]
        if consts:
            o.append('')
            for c in consts:
                o.append(f'#define {cglobal(c.name)} {g.cval(c.val)}')
        progs = [d for d in s.defs if isinstance(d, ProgramDef)]
        for p in progs:
            o.append('')
            o.append(f'#define {cglobal(p.name)} {g.cval(p.num)}')
            done = set()
            for v in p.versions:
                o.append(f'#define {cglobal(v.name)} {g.cval(v.num)}')
                for pr in v.procs:
                    if pr.name not in done:
                        done.add(pr.name)
                        o.append(f'#define {cglobal(pr.name)} {g.cval(pr.num)}')
        types = g.local_types()
        enums = [d for d in types if isinstance(d, EnumDef)]
        for e in enums:
            o += ['', f'enum {cglobal(e.name)} {{']
            for m, v, _ in e.members:
                n = g.num_of(v, e.spec, quiet=True)
                val = g.cval(v)
                if n is not None and n >= 2**31:
                    val = f'(int32_t){val}'
                o.append(f'\t{cglobal(m)} = {val},')
            o += ['};', f'typedef int32_t {cglobal(e.name)};']
        aggs = [d for d in types if isinstance(d, (StructDef, UnionDef))]
        if aggs:
            o.append('')
            for d in aggs:
                o.append(f'typedef struct {cglobal(d.name)} {cglobal(d.name)};')
        prev = None
        for d in self.type_order(types):
            if not (isinstance(d, TypedefDef) and isinstance(prev, TypedefDef)):
                o.append('')
            o += self.type_body(d)
            prev = d
        if types:
            o.append('')
            for d in types:
                if g.has_codecs(d):
                    cn = cglobal(d.name)
                    o.append(f'int xdr_dec_{cn}(struct xdr_dec *, {cn} *);')
                    o.append(f'int xdr_enc_{cn}(struct xdr_enc *, const {cn} *);')
        if progs:
            o.append('')
            for p in progs:
                for v in p.versions:
                    o.append(f'extern const struct xdr_vers_desc xdr_desc_{c_ident(p.name)}_{c_ident(v.name)};')
        o += ['', f'#endif /* {guard} */', '']
        return '\n'.join(o)

    def type_body(self, d):
        g = self.g
        cn = cglobal(d.name)
        if isinstance(d, TypedefDef):
            return [f'typedef {g.cdecl(d.decl.t, cn)};']
        if isinstance(d, StructDef):
            o = [f'struct {cn} {{']
            mem = g.members(d)
            for f in mem:
                o.append(f'\t{g.cdecl(f.t, g.cfield(f.name, d.spec))};')
            if not mem:
                o.append('\tuint8_t unused_; /* no members on the wire */')
            o.append('};')
            return o
        o = [f'struct {cn} {{', f'\t{g.cdecl(d.disc.t, self.disc_name(d))};']
        mem = g.members(d)
        if mem:
            o.append('\tunion {')
            for a in mem:
                o.append(f'\t\t{g.cdecl(a.t, g.cfield(a.name, d.spec))};')
            o.append('\t} u;')
        o.append('};')
        return o

    def type_order(self, types):
        """Structs, unions and typedefs in an order C accepts."""
        g = self.g
        local = {d.name: d for d in types if not isinstance(d, EnumDef)}
        out, done, busy = [], set(), set()

        def need_decl(name, line, spec):
            d = local.get(name)
            if isinstance(d, TypedefDef):
                emit_typedef(d)

        def need_complete(name, line, spec):
            d = local.get(name)
            if d is None:
                return
            if isinstance(d, TypedefDef):
                emit_typedef(d)
                t = d.decl.t
                if isinstance(t, Ref):
                    need_complete(t.name, d.line, d.spec)
                return
            if d.name in done:
                return
            if d.name in busy:
                raise g.err(line, f'{d.kind} {d.name} contains itself (use an optional or a variable array)', spec)
            busy.add(d.name)
            mem = g.members(d)
            if isinstance(d, UnionDef):
                mem = [d.disc] + mem
            for f in mem:
                value_dep(f.t, f.line, d.spec)
            busy.discard(d.name)
            done.add(d.name)
            out.append(d)

        def value_dep(t, line, spec):
            if isinstance(t, Ref):
                need_complete(t.name, line, spec)
            elif isinstance(t, Fixed) and isinstance(t.elem, Ref):
                need_complete(t.elem.name, line, spec)
            elif isinstance(t, (VarArr, Opt)) and isinstance(t.elem, Ref):
                need_decl(t.elem.name, line, spec)

        def emit_typedef(d):
            if d.name in done:
                return
            if d.name in busy:
                raise g.err(d.line, f'typedef {d.name} depends on itself', d.spec)
            busy.add(d.name)
            t = d.decl.t
            if isinstance(t, Ref):
                need_decl(t.name, d.line, d.spec)
            elif isinstance(t, Fixed) and isinstance(t.elem, Ref):
                need_complete(t.elem.name, d.line, d.spec)
            elif isinstance(t, (VarArr, Opt)) and isinstance(t.elem, Ref):
                need_decl(t.elem.name, d.line, d.spec)
            busy.discard(d.name)
            done.add(d.name)
            out.append(d)

        for d in types:
            if not isinstance(d, EnumDef):
                need_complete(d.name, d.line, d.spec)
        return out

    # ------------------------------------------------------------ codecs

    def source(self):
        g, s = self.g, self.spec
        o = [f'/* Generated by tools/xdrgen.py from {os.path.basename(s.path)}: do not edit. */',
             f'#include "{s.base}.h"', '']
        for d in g.local_types():
            if not g.has_codecs(d):
                continue
            o += self.codec_dec(d)
            o += self.codec_enc(d)
        o += self.programs()
        return '\n'.join(o)

    def proc_codec(self, t, wrappers):
        """Names of the void * wrappers for a procedure argument/result type."""
        g = self.g
        if t is None:
            return ('0', 'xdr_dec_void', 'xdr_enc_void')
        if isinstance(t, Prim):
            key, ctype = 'p_' + t.kind, PRIM_C[t.kind]
            dec = f'return xdr_dec_{PRIM_CODEC[t.kind]}(d, v);'
            enc = f'return xdr_enc_{PRIM_CODEC[t.kind]}(e, *(const {ctype} *)v);'
        elif isinstance(t, String):
            key, ctype = 'string', 'xdr_string'
            dec = 'return xdr_dec_string(d, v, XDR_MAX_OPAQUE_DEFAULT);'
            enc = 'return xdr_enc_string(e, v, XDR_MAX_OPAQUE_DEFAULT);'
        else:
            key = ctype = cglobal(t.name)
            d = g.lookup(t)
            if isinstance(d, EnumDef):
                dec = 'return xdr_dec_enum(d, v);'
                enc = f'return xdr_enc_enum(e, *(const {ctype} *)v);'
            elif isinstance(d, TypedefDef) and d.name in RUNTIME_ALIASES:
                dec = f'return xdr_dec_{d.name}(d, v);'
                enc = f'return xdr_enc_{d.name}(e, *(const {ctype} *)v);'
            else:
                dec = f'return xdr_dec_{ctype}(d, v);'
                enc = f'return xdr_enc_{ctype}(e, v);'
        if key not in wrappers:
            wrappers[key] = [
                f'static int xdrp_dec_{key}(struct xdr_dec *d, void *v)', '{', '\t' + dec, '}', '',
                f'static int xdrp_enc_{key}(struct xdr_enc *e, const void *v)', '{', '\t' + enc, '}', '']
        return (f'sizeof({ctype})', f'xdrp_dec_{key}', f'xdrp_enc_{key}')

    def programs(self):
        g = self.g
        wrappers, tables = {}, []
        for p in [d for d in self.spec.defs if isinstance(d, ProgramDef)]:
            for v in p.versions:
                tag = f'{c_ident(p.name)}_{c_ident(v.name)}'
                rows = {}
                for pr in v.procs:
                    rows[g.num_of(pr.num, p.spec)] = pr
                n = max(rows) + 1
                tables.append(f'static const struct xdr_proc_desc xdr_procs_{tag}[{n}] = {{')
                for num in sorted(rows):
                    pr = rows[num]
                    asz, adec, aenc = self.proc_codec(pr.arg, wrappers)
                    rsz, rdec, renc = self.proc_codec(pr.res, wrappers)
                    tables += [
                        f'\t[{num}] = {{',
                        f'\t\t.proc = {num},',
                        f'\t\t.name = "{pr.name}",',
                        f'\t\t.arg_size = {asz},',
                        f'\t\t.res_size = {rsz},',
                        f'\t\t.dec_arg = {adec},',
                        f'\t\t.dec_res = {rdec},',
                        f'\t\t.enc_arg = {aenc},',
                        f'\t\t.enc_res = {renc},',
                        '\t},']
                tables += ['};', '',
                           f'const struct xdr_vers_desc xdr_desc_{tag} = {{',
                           f'\t.prog = {cglobal(p.name)},',
                           f'\t.vers = {cglobal(v.name)},',
                           f'\t.name = "{p.name}",',
                           f'\t.procs = xdr_procs_{tag},',
                           f'\t.nprocs = {n},',
                           '};', '']
        out = []
        for w in wrappers.values():
            out += w
        return out + tables


# ------------------------------------------------- random values (rt, fuzz)

RND_HELPERS = r'''
/* ------------------------------------------------ random valid values */

#define RND_MAXDEPTH 3u /* optional/recursive nesting of random values */
#define RND_UNUSED __attribute__((unused))

struct rnd {
	uint64_t s;
	struct xdr_arena *a;
	size_t budget; /* bytes; when spent, arrays and opaques stay empty */
};

RND_UNUSED static uint64_t rnd_u64(struct rnd *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

RND_UNUSED static uint32_t rnd_u32(struct rnd *r)
{
	return (uint32_t)(rnd_u64(r) >> 32);
}

/* Uniform in [0, n). */
RND_UNUSED static uint32_t rnd_below(struct rnd *r, uint32_t n)
{
	return (uint32_t)(((uint64_t)rnd_u32(r) * n) >> 32);
}

/* Integers biased towards edge values. */
RND_UNUSED static uint32_t rnd_int32(struct rnd *r)
{
	switch (rnd_below(r, 8)) {
	case 0:
		return 0;
	case 1:
		return 0xffffffffu;
	case 2:
		return 0x80000000u;
	case 3:
		return rnd_below(r, 16);
	default:
		return rnd_u32(r);
	}
}

RND_UNUSED static uint64_t rnd_int64(struct rnd *r)
{
	switch (rnd_below(r, 8)) {
	case 0:
		return 0;
	case 1:
		return ~0ull;
	case 2:
		return 1ull << 63;
	case 3:
		return rnd_below(r, 16);
	default:
		return rnd_u64(r);
	}
}

RND_UNUSED static float rnd_float(struct rnd *r)
{
	uint32_t b = rnd_u32(r);
	float f;

	memcpy(&f, &b, sizeof(f));
	return f;
}

RND_UNUSED static double rnd_double(struct rnd *r)
{
	uint64_t b = rnd_u64(r);
	double f;

	memcpy(&f, &b, sizeof(f));
	return f;
}

RND_UNUSED static void *rnd_alloc(struct rnd *r, size_t n)
{
	void *p = xdr_arena_alloc(r->a, n);

	if (!p) {
		fprintf(stderr, "xdr random values: arena exhausted\n");
		abort();
	}
	r->budget = r->budget > n ? r->budget - n : 0;
	return p;
}

RND_UNUSED static void rnd_bytes(struct rnd *r, uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rnd_u32(r);
}

/* Element count of a variable array: 0..min(max, 4). */
RND_UNUSED static uint32_t rnd_count(struct rnd *r, uint32_t max, bool deeper, unsigned depth)
{
	uint32_t lim = max < 4 ? max : 4;

	if (!r->budget || (deeper && depth >= RND_MAXDEPTH))
		return 0;
	return rnd_below(r, lim + 1);
}

/* Is optional data present? */
RND_UNUSED static bool rnd_more(struct rnd *r, unsigned depth)
{
	return r->budget && depth < RND_MAXDEPTH && rnd_below(r, 2);
}

/* 0..min(max, 3000) bytes, so that some are referenced by the encoder. */
RND_UNUSED static xdr_opaque rnd_opaque(struct rnd *r, uint32_t max, bool str)
{
	uint32_t lim = rnd_below(r, 2) ? 40 : 3000, len;
	uint8_t *p = NULL;

	if (lim > max)
		lim = max;
	if (!r->budget)
		lim = 0;
	len = rnd_below(r, lim + 1);
	if (len) {
		p = rnd_alloc(r, len);
		for (uint32_t i = 0; i < len; i++)
			p[i] = str ? (uint8_t)('a' + rnd_below(r, 26)) : (uint8_t)rnd_u32(r);
	}
	return (xdr_opaque){ .len = len, .val = p };
}
'''


class RndEmitter:
    """Random valid values for every type (shared by the rt and fuzz files)."""

    def __init__(self, g):
        self.g = g

    def reachable(self):
        """Local types, then imported ones they use (those get builders too)."""
        g = self.g
        seen = set()
        stack = list(reversed(g.local_types()))
        order = []
        while stack:
            d = stack.pop()
            if d.name in seen:
                continue
            seen.add(d.name)
            order.append(d)
            for r in g.refs_of(d):
                rd = g.types.get(r)
                if rd is not None and rd.name not in seen:
                    stack.append(rd)
        local = set(id(d) for d in g.local_types())
        out = [d for d in order if id(d) in local] + [d for d in order if id(d) not in local]
        return out

    def rnd(self, fn, t, lv, ind, depth='depth'):
        g = self.g
        if isinstance(t, Void) or g.is_size0(t):
            return
        if isinstance(t, Prim):
            k = t.kind
            expr = {'int': '(int32_t)rnd_int32(r)', 'uint': 'rnd_int32(r)',
                    'hyper': '(int64_t)rnd_int64(r)', 'uhyper': 'rnd_int64(r)',
                    'float': 'rnd_float(r)', 'double': 'rnd_double(r)',
                    'bool': 'rnd_below(r, 2)'}[k]
            fn(ind, f'{lv} = {expr};')
        elif isinstance(t, Ref):
            d = g.lookup(t)
            if isinstance(d, EnumDef):
                fn(ind, f'{lv} = rnde_{cglobal(d.name)}(r);')
            elif isinstance(d, TypedefDef) and isinstance(d.decl.t, (Prim, Ref, OpaqueFixed, OpaqueVar, String)):
                self.rnd(fn, d.decl.t, lv, ind, depth)
            elif isinstance(d, Ext):
                fn(ind, f'memset({addr(lv)}, 0, sizeof({lv})); /* external type: zero */')
            else:
                fn(ind, f'rndt_{cglobal(d.name)}(r, {addr(lv)}, {depth}, -1);')
        elif isinstance(t, Fixed):
            i = f'i{fn.loops}'
            fn.loops += 1
            fn(ind, f'for (uint32_t {i} = 0; {i} < {g.cval(t.size)}; {i}++) {{')
            self.rnd(fn, t.elem, f'{lv}[{i}]', ind + 1, depth)
            fn(ind, '}')
            fn.loops -= 1
        elif isinstance(t, VarArr):
            rec = g.recursive(fn.owner, t.elem)
            ln, vl = member(lv, 'len'), member(lv, 'val')
            fn(ind, f'{ln} = rnd_count(r, {g.cbound(t)}, {"true" if rec else "false"}, {depth});')
            fn(ind, f'{vl} = {ln} ? rnd_alloc(r, {ln} * sizeof(*{vl})) : NULL;')
            i = f'i{fn.loops}'
            fn.loops += 1
            fn(ind, f'for (uint32_t {i} = 0; {i} < {ln}; {i}++) {{')
            self.rnd(fn, t.elem, f'{vl}[{i}]', ind + 1, f'{depth} + 1' if rec else depth)
            fn(ind, '}')
            fn.loops -= 1
        elif isinstance(t, OpaqueFixed):
            fn(ind, f'rnd_bytes(r, {lv}, {g.cval(t.size)});')
        elif isinstance(t, OpaqueVar):
            fn(ind, f'{lv} = rnd_opaque(r, {g.cbound(t)}, false);')
        elif isinstance(t, String):
            fn(ind, f'{lv} = rnd_opaque(r, {g.cbound(t)}, true);')
        elif isinstance(t, Opt):
            fn(ind, f'if (rnd_more(r, {depth})) {{')
            fn(ind + 1, f'{lv} = rnd_alloc(r, sizeof(*{lv}));')
            self.rnd(fn, t.elem, f'(*{lv})', ind + 1, f'{depth} + 1')
            fn(ind, '} else {')
            fn(ind + 1, f'{lv} = NULL;')
            fn(ind, '}')
        else:
            raise AssertionError(t)

    def union_info(self, u):
        """(labels as C, default reachable, discriminant kind, enum def)."""
        g = self.g
        dt = g.resolve(u.disc.t)
        labels = [lab for a in u.arms for lab in a.labels]
        nums = {g.num_of(lab, u.spec, quiet=True) for lab in labels}
        full = isinstance(dt, Prim) and dt.kind == 'bool' and {0, 1} <= nums
        reach = u.default is not None and not full
        return labels, reach, dt

    def bad_disc(self, u):
        """Can a discriminant match no case of a union without default?"""
        labels, _, dt = self.union_info(u)
        if u.default is not None:
            return False
        nums = {self.g.num_of(lab, u.spec, quiet=True) for lab in labels}
        return not (isinstance(dt, Prim) and dt.kind == 'bool' and {0, 1} <= nums)

    def builder(self, d):
        g = self.g
        cn = cglobal(d.name)
        proto = f'static void rndt_{cn}(struct rnd *r, {cn} *v, unsigned depth, int hint)'
        fn = Fn(d.name)
        em = Emitter(g)
        if isinstance(d, EnumDef):
            fn(1, '(void)depth;')
            fn(1, '(void)hint;')
            fn(1, f'*v = rnde_{cn}(r);')
        elif isinstance(d, TypedefDef):
            fn(1, '(void)depth;')
            fn(1, '(void)hint;')
            self.rnd(fn, d.decl.t, '(*v)', 1)
        elif isinstance(d, StructDef):
            fn(1, '(void)depth;')
            fn(1, '(void)hint;')
            nxt = g.list_next(d)
            if nxt is None:
                for f in g.members(d):
                    self.rnd(fn, f.t, f'v->{g.cfield(f.name, d.spec)}', 1)
            else:
                nn = g.cfield(nxt.name, d.spec)
                fn(1, 'for (uint32_t n = rnd_below(r, 4);; n--) {')
                for f in g.members(d)[:-1]:
                    self.rnd(fn, f.t, f'v->{g.cfield(f.name, d.spec)}', 2)
                fn(2, 'if (!n || !r->budget) {')
                fn(3, f'v->{nn} = NULL;')
                fn(3, 'return;')
                fn(2, '}')
                fn(2, f'v->{nn} = rnd_alloc(r, sizeof(*v->{nn}));')
                fn(2, f'v = v->{nn};')
                fn(1, '}')
        elif isinstance(d, UnionDef):
            labels, reach, dt = self.union_info(d)
            dn = em.disc_name(d)
            narms = len(labels) + (1 if reach else 0)
            dct = self.disc_ctype(d)
            if labels:
                fn(1, f'static const {dct} labels[] = {{')
                for lab in labels:
                    fn(2, f'{g.cval(lab)},')
                fn(1, '};')
            if labels:
                fn(1, f'unsigned arm = hint >= 0 ? (unsigned)hint % {narms}u : rnd_below(r, {narms});')
                fn(1, '')
            else:
                fn(1, '(void)hint;')
            fn(1, '(void)depth;')
            if labels:
                fn(1, f'if (arm < {len(labels)}u) {{')
                fn(2, f'v->{dn} = labels[arm];')
                fn(1, '} else {')
            else:
                fn(1, '{')
            if reach:
                cand = self.disc_candidate(dt)
                fn(2, '/* the default arm: a discriminant matching no case */')
                fn(2, f'v->{dn} = {cand};')
                fn(2, f'for (unsigned k = 0; k < 1000 && incase_{cn}(v->{dn}); k++)')
                fn(3, f'v->{dn} = {cand};')
            else:
                fn(2, 'abort(); /* unreachable */')
            fn(1, '}')
            fn(1, f'switch ({em.disc_switch(d, "v->" + dn)}) {{')
            for a in d.arms:
                for lab in a.labels:
                    fn(1, f'case {g.cval(lab)}:')
                self.rnd_arm(fn, d, a.decl)
            fn(1, 'default:')
            if d.default:
                self.rnd_arm(fn, d, d.default)
            else:
                fn(2, 'break;')
            fn(1, '}')
        if all(line.startswith('\t(void)') for line in fn.lines):
            fn(1, '(void)r;')
            fn(1, '(void)v;')
        return [proto, '{'] + fn.lines + ['}', '']

    def rnd_arm(self, fn, u, decl):
        if decl.name is not None:
            self.rnd(fn, decl.t, f'v->u.{self.g.cfield(decl.name, u.spec)}', 2)
        fn(2, 'break;')

    def disc_ctype(self, u):
        t = u.disc.t
        return self.g.ctype(t)

    def disc_candidate(self, dt):
        if isinstance(dt, Prim):
            return {'int': '(int32_t)rnd_int32(r)', 'uint': 'rnd_int32(r)',
                    'bool': 'rnd_below(r, 2)'}[dt.kind]
        if isinstance(dt, EnumDef):
            return f'(rnd_below(r, 2) ? rnde_{cglobal(dt.name)}(r) : (int32_t)rnd_int32(r))'
        return '(int32_t)rnd_int32(r)'

    def emit(self):
        g = self.g
        types = self.reachable()
        o = [RND_HELPERS]
        enums = [d for d in types if isinstance(d, EnumDef)]
        # Enums reached only as discriminants of reachable unions count too.
        for d in types:
            if isinstance(d, UnionDef):
                dt = g.resolve(d.disc.t)
                if isinstance(dt, EnumDef) and dt not in enums:
                    enums.append(dt)
        for e in enums:
            cn = cglobal(e.name)
            o.append(f'static const int32_t rndv_{cn}[] = {{')
            for m, _, _ in e.members:
                o.append(f'\t(int32_t){cglobal(m)},')
            o += ['};', '',
                  f'RND_UNUSED static int32_t rnde_{cn}(struct rnd *r)', '{',
                  f'\treturn rndv_{cn}[rnd_below(r, {len(e.members)})];', '}', '']
        for d in types:
            if isinstance(d, UnionDef):
                labels, reach, dt = self.union_info(d)
                if not reach and not self.bad_disc(d):
                    continue
                cn = cglobal(d.name)
                sw = '(int)x' if isinstance(dt, Prim) and dt.kind == 'bool' else 'x'
                o += [f'RND_UNUSED static bool incase_{cn}({self.disc_ctype(d)} x)', '{']
                if labels:
                    o.append(f'\tswitch ({sw}) {{')
                    for lab in labels:
                        o.append(f'\tcase {g.cval(lab)}:')
                    o += ['\t\treturn true;', '\tdefault:', '\t\treturn false;', '\t}']
                else:
                    o += ['\t(void)x;', '\treturn false;']
                o += ['}', '']
        for d in types:
            cn = cglobal(d.name)
            o.append(f'RND_UNUSED static void rndt_{cn}(struct rnd *r, {cn} *v, unsigned depth, int hint);')
        o.append('')
        for d in types:
            o += self.builder(d)
        return o

    def narms(self, d):
        if isinstance(d, UnionDef):
            labels, reach, _ = self.union_info(d)
            return len(labels) + (1 if reach else 0)
        return 0


# ------------------------------------------------------ round-trip test

RT_MAIN = r'''
/* ----------------------------------------------------- the test proper */

#define RT_ITERS 100u          /* random values per type */
#define RT_HOSTILE_ITERS 30u   /* of which also get prefix and overwrite checks */
#define RT_MAXIOV 65536u
#define RT_LIMIT (256u << 20)  /* decoder arena for valid input */
#define RT_HOSTILE_LIMIT (4u << 20)
#define RT_BUDGET (64u << 10)  /* bytes of random data per value */
#define RT_BOUND_SKIP (1u << 16) /* bounds this large are not filled */

struct rt;
struct rt_type {
	const char *name;
	size_t size;
	unsigned narms;
	void (*rnd)(struct rnd *, void *, int);
	int (*dec)(struct xdr_dec *, void *);
	int (*enc)(struct xdr_enc *, const void *);
	int (*bounds)(struct rt *);
};

struct rt {
	struct rnd r;
	struct xdr_arena va, da, ea;
	struct iovec *iov;
	const struct rt_type *ty;
	unsigned long cases;
	unsigned iter;
};

static int rt_roundtrip(struct rt *t, const void *v, bool small, bool hostile);
static int rt_overbound(struct rt *t, const void *v, int (*wire)(struct xdr_enc *, const void *),
			const char *site);
static int rt_baddisc(struct rt *t, const void *v, int (*wire)(struct xdr_enc *, const void *));
@TYPES@
static uint8_t rt_first[1u << 16] __attribute__((aligned(8)));
static uint8_t rt_scratch[1u << 16];

static int rt_fail(struct rt *t, const char *what, long a, long b)
{
	fprintf(stderr, "xdr-roundtrip @BASE@: type %s, iteration %u: %s (%ld, %ld)\n",
		t->ty->name, t->iter, what, a, b);
	return -1;
}

/* Encode v into a malloc'd buffer; small scratch forces arena chunks. */
static int rt_encode(struct rt *t, int (*enc)(struct xdr_enc *, const void *), const void *v,
		     bool small, uint8_t **out, size_t *len)
{
	struct xdr_enc e;
	int err;

	*out = NULL;
	*len = 0;
	xdr_arena_reset(&t->ea);
	xdr_enc_init(&e, t->iov, RT_MAXIOV, rt_scratch, small ? 64 : sizeof(rt_scratch), &t->ea);
	err = enc(&e, v);
	if (err != e.err) {
		rt_fail(t, "encoder result differs from e->err", err, e.err);
		exit(1);
	}
	if (err)
		return err;
	*out = malloc(e.len ? e.len : 1);
	if (!*out)
		abort();
	xdr_enc_flatten(&e, *out);
	*len = e.len;
	return 0;
}

/* Decode w[0..n) (an exact-size allocation, so ASan sees any overread). */
static int rt_decode(struct rt *t, const uint8_t *w, size_t n, size_t limit, void **out,
		     size_t *used)
{
	struct xdr_dec d;
	void *v;
	int err;

	xdr_arena_release(&t->da);
	xdr_arena_init(&t->da, rt_first, sizeof(rt_first), limit);
	v = xdr_arena_alloc(&t->da, t->ty->size);
	if (!v)
		abort();
	xdr_dec_init(&d, w, n, &t->da);
	err = t->ty->dec(&d, v);
	if (d.p < w || d.p > d.end || t->da.total > limit) {
		rt_fail(t, "decoder overran its input or arena", (long)(d.p - w), (long)n);
		exit(1);
	}
	*out = v;
	*used = (size_t)(d.p - w);
	return err;
}

static uint8_t *rt_dup(const uint8_t *w, size_t n)
{
	uint8_t *c = malloc(n ? n : 1);

	if (!c)
		abort();
	if (n)
		memcpy(c, w, n);
	return c;
}

/* A hostile decode either fails or yields a value that re-encodes exactly. */
static int rt_hostile_one(struct rt *t, const uint8_t *w, size_t n)
{
	uint8_t *c = rt_dup(w, n), *w2;
	size_t used, n2;
	void *v;
	int err, rc = 0;

	err = rt_decode(t, c, n, RT_HOSTILE_LIMIT, &v, &used);
	if (!err) {
		err = rt_encode(t, t->ty->enc, v, false, &w2, &n2);
		if (err)
			rc = rt_fail(t, "hostile input decoded but does not re-encode", err, 0);
		else if (n2 != used || memcmp(w2, c, used))
			rc = rt_fail(t, "hostile input decoded but re-encodes differently", (long)n2, (long)used);
		free(w2);
	}
	free(c);
	return rc;
}

static int rt_hostile(struct rt *t, const uint8_t *w, size_t n)
{
	size_t nw = n / 4;
	void *v;
	size_t used;

	/* Every strict prefix must fail (sampled for long encodings). */
	for (size_t k = 0; k < n; k++) {
		size_t plen = k;
		uint8_t *c;
		int err;

		if (n > 96) {
			if (k >= 64)
				break;
			plen = k < 16 ? k : k < 32 ? n - 1 - (k - 16) : rnd_below(&t->r, (uint32_t)n);
		}
		c = rt_dup(w, plen);
		err = rt_decode(t, c, plen, RT_HOSTILE_LIMIT, &v, &used);
		free(c);
		if (!err)
			return rt_fail(t, "a strict prefix decoded", (long)plen, (long)n);
	}
	/* Overwrite aligned words with huge values. */
	for (size_t k = 0; k < nw && k < 48; k++) {
		size_t word = nw > 48 ? rnd_below(&t->r, (uint32_t)nw) : k;
		static const uint32_t pat[] = { 0xffffffffu, 0x80000000u };

		for (unsigned j = 0; j < 2; j++) {
			uint8_t *c = rt_dup(w, n);
			int rc;

			xdr_put32(c + 4 * word, pat[j]);
			rc = rt_hostile_one(t, c, n);
			free(c);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* encode -> flatten -> decode (all bytes) -> encode -> same bytes. */
static int rt_roundtrip(struct rt *t, const void *v, bool small, bool hostile)
{
	uint8_t *w1, *w2;
	size_t n1, n2, used;
	void *dv;
	int err, rc = 0;

	err = rt_encode(t, t->ty->enc, v, small, &w1, &n1);
	if (err)
		return rt_fail(t, "encode failed", err, 0);
	err = rt_decode(t, w1, n1, RT_LIMIT, &dv, &used);
	if (err)
		rc = rt_fail(t, "decode failed", err, (long)n1);
	else if (used != n1)
		rc = rt_fail(t, "decode did not consume every byte", (long)used, (long)n1);
	if (!rc) {
		err = rt_encode(t, t->ty->enc, dv, !small, &w2, &n2);
		if (err)
			rc = rt_fail(t, "re-encode failed", err, 0);
		else if (n2 != n1 || memcmp(w1, w2, n1))
			rc = rt_fail(t, "re-encode differs", (long)n2, (long)n1);
		free(w2);
	}
	if (!rc && hostile)
		rc = rt_hostile(t, w1, n1);
	free(w1);
	t->cases++;
	return rc;
}

/*
 * v holds a member of length bound + 1: the encoder must refuse it, and
 * the same bytes written without the check must not decode.
 */
RND_UNUSED static int rt_overbound(struct rt *t, const void *v,
				   int (*wire)(struct xdr_enc *, const void *), const char *site)
{
	uint8_t *w;
	size_t n, used;
	void *dv;
	int err;

	err = rt_encode(t, t->ty->enc, v, false, &w, &n);
	free(w);
	if (err != -EMSGSIZE) {
		fprintf(stderr, "xdr-roundtrip @BASE@: %s: ", site);
		return rt_fail(t, "encoder did not refuse length bound + 1", err, -EMSGSIZE);
	}
	err = rt_encode(t, wire, v, false, &w, &n);
	if (err)
		return rt_fail(t, "over-bound wire form not built", err, 0);
	err = rt_decode(t, w, n, RT_LIMIT, &dv, &used);
	free(w);
	if (err != -EBADMSG) {
		fprintf(stderr, "xdr-roundtrip @BASE@: %s: ", site);
		return rt_fail(t, "decoder did not reject length bound + 1", err, -EBADMSG);
	}
	t->cases += 2;
	return 0;
}

/* A union whose discriminant matches no arm: neither encoded nor decoded. */
RND_UNUSED static int rt_baddisc(struct rt *t, const void *v,
				 int (*wire)(struct xdr_enc *, const void *))
{
	uint8_t *w;
	size_t n, used;
	void *dv;
	int err;

	err = rt_encode(t, t->ty->enc, v, false, &w, &n);
	free(w);
	if (err != -EBADMSG)
		return rt_fail(t, "encoder accepted a discriminant that matches no arm", err, -EBADMSG);
	err = rt_encode(t, wire, v, false, &w, &n);
	if (err)
		return rt_fail(t, "bad-discriminant wire form not built", err, 0);
	err = rt_decode(t, w, n, RT_LIMIT, &dv, &used);
	free(w);
	if (err != -EBADMSG)
		return rt_fail(t, "decoder accepted a discriminant that matches no arm", err, -EBADMSG);
	t->cases += 2;
	return 0;
}

int main(void)
{
	struct rt t;
	unsigned ntypes = sizeof(rt_types) / sizeof(rt_types[0]);

	memset(&t, 0, sizeof(t));
	t.iov = calloc(RT_MAXIOV, sizeof(*t.iov));
	if (!t.iov)
		abort();
	xdr_arena_init(&t.va, NULL, 0, 512u << 20);
	xdr_arena_init(&t.ea, NULL, 0, 512u << 20);
	xdr_arena_init(&t.da, NULL, 0, RT_LIMIT);
	t.r.a = &t.va;
	for (unsigned i = 0; i < ntypes; i++) {
		const struct rt_type *ty = &rt_types[i];
		unsigned iters = ty->narms > RT_ITERS ? ty->narms : RT_ITERS;

		t.ty = ty;
		t.r.s = 0x62726169640000ull + i; /* fixed seed per type */
		for (t.iter = 0; t.iter < iters; t.iter++) {
			void *v;

			xdr_arena_reset(&t.va);
			t.r.budget = RT_BUDGET;
			v = rnd_alloc(&t.r, ty->size);
			ty->rnd(&t.r, v, (int)t.iter);
			if (rt_roundtrip(&t, v, t.iter & 1, t.iter < RT_HOSTILE_ITERS))
				return 1;
		}
		if (ty->bounds && ty->bounds(&t))
			return 1;
	}
	xdr_arena_release(&t.va);
	xdr_arena_release(&t.ea);
	xdr_arena_release(&t.da);
	free(t.iov);
	printf("xdr-roundtrip @BASE@: %u types, %lu cases: ok\n", ntypes, t.cases);
	return 0;
}
'''


class RtEmitter:
    def __init__(self, g, rnd):
        self.g, self.rndem = g, rnd
        self.em = Emitter(g)

    def sites(self, d):
        """Members with a declared bound: (lvalue, shape, hint, member, label)."""
        g = self.g
        out = []

        def shape(t):
            r = g.resolve(t)
            if isinstance(r, (VarArr, OpaqueVar, String)) and r.max is not None:
                return r
            return None
        if isinstance(d, TypedefDef):
            s = shape(d.decl.t)
            if s:
                out.append(('(*v)', s, 0, None, d.name))
        elif isinstance(d, StructDef):
            for idx, f in enumerate(g.members(d)):
                s = shape(f.t)
                if s:
                    out.append((f'v->{g.cfield(f.name, d.spec)}', s, 0, f, f'{d.name}.{f.name}'))
        elif isinstance(d, UnionDef):
            labels, reach, _ = self.rndem.union_info(d)
            idx = 0
            for a in d.arms:
                s = shape(a.decl.t) if a.decl.name else None
                if s:
                    out.append((f'v->u.{g.cfield(a.decl.name, d.spec)}', s, idx, a.decl,
                                f'{d.name}.{a.decl.name}'))
                idx += len(a.labels)
            if d.default and d.default.name and reach:
                s = shape(d.default.t)
                if s:
                    out.append((f'v->u.{g.cfield(d.default.name, d.spec)}', s, len(labels),
                                d.default, f'{d.name}.{d.default.name}'))
        return out

    def wire_fn(self, d, k, site):
        """An encoder of d that writes the site's length without checking it."""
        g, em = self.g, self.em
        cn = cglobal(d.name)
        lv, shp, _, mem, _ = site
        fn = Fn(d.name)
        proto = f'static int rtw_{cn}_{k}(struct xdr_enc *e, const void *vp)'
        fn(1, f'const {cn} *v = vp;')
        fn(1, '')
        if isinstance(d, TypedefDef):
            em.enc(fn, shp, lv, 1, checked=False)
        elif isinstance(d, StructDef):
            for f in g.members(d):
                em.enc(fn, g.resolve(f.t) if f is mem else f.t,
                       f'v->{g.cfield(f.name, d.spec)}', 1, checked=f is not mem)
        else:
            dn = em.disc_name(d)
            em.enc(fn, d.disc.t, f'v->{dn}', 1)
            em.enc(fn, shp, lv, 1, checked=False)
        return finish(fn, proto)

    def bounds_fn(self, d):
        g = self.g
        sites = self.sites(d)
        bad = isinstance(d, UnionDef) and self.rndem.bad_disc(d)
        if not sites and not bad:
            return None, []
        cn = cglobal(d.name)
        out = []
        for k, s in enumerate(sites):
            out += self.wire_fn(d, k, s)
        if bad:
            fn = Fn(d.name)
            fn(1, f'const {cn} *v = vp;')
            fn(1, 'static const uint8_t zero[64];')
            fn(1, '')
            self.em.enc(fn, d.disc.t, f'v->{self.em.disc_name(d)}', 1)
            call(fn, 1, 'xdr_enc_bytes(e, zero, sizeof(zero))')
            out += finish(fn, f'static int rtw_{cn}_disc(struct xdr_enc *e, const void *vp)')
        fn = Fn(d.name)
        fn(1, 'struct rnd *r = &t->r;')
        fn(1, 'unsigned depth = 0;')
        fn(1, f'{cn} *v;')
        fn(1, 'uint32_t bound;')
        fn(1, '')
        nxt = g.list_next(d) if isinstance(d, StructDef) else None
        fn(1, 'for (unsigned it = 0; it < 2; it++) {')
        for k, (lv, shp, hint, _, label) in enumerate(sites):
            ln, vl = member(lv, 'len'), member(lv, 'val')
            fn(2, f'/* {label} */')
            fn(2, f'bound = {g.cbound(shp)};')
            if isinstance(shp, VarArr):
                esz = f'sizeof({g.ctype(shp.elem)})'
                fn(2, f'if (bound < RT_BOUND_SKIP && ((size_t)bound + 1) * {esz} < (16u << 20)) {{')
            else:
                fn(2, 'if (bound < RT_BOUND_SKIP) {')
            fn(3, 'xdr_arena_reset(&t->va);')
            fn(3, 'r->budget = RT_BUDGET;')
            fn(3, 'v = rnd_alloc(r, sizeof(*v));')
            fn(3, f'rndt_{cn}(r, v, 0, {hint});')
            if nxt is not None:
                fn(3, f'v->{g.cfield(nxt.name, d.spec)} = NULL;')
            if isinstance(shp, VarArr):
                fn(3, '{')
                fn(4, f'{g.ctype(shp.elem)} *a = rnd_alloc(r, ((size_t)bound + 1) * sizeof(*a));')
                fn(4, '')
                self.rndem.rnd(fn, shp.elem, 'a[0]', 4)
                fn(4, 'for (uint32_t k = 1; k <= bound; k++)')
                fn(5, 'memcpy(&a[k], &a[0], sizeof(a[0]));')
                fn(4, f'{vl} = a;')
                fn(3, '}')
            else:
                fn(3, '{')
                fn(4, 'uint8_t *a = rnd_alloc(r, (size_t)bound + 1);')
                fn(4, '')
                fn(4, 'for (uint32_t k = 0; k <= bound; k++)')
                ch = "(uint8_t)('a' + rnd_below(r, 26))" if isinstance(shp, String) else '(uint8_t)rnd_u32(r)'
                fn(5, f'a[k] = {ch};')
                fn(4, f'{vl} = a;')
                fn(3, '}')
            fn(3, f'{ln} = bound + 1;')
            fn(3, f'if (rt_overbound(t, v, rtw_{cn}_{k}, "{label}"))')
            fn(4, 'return -1;')
            fn(3, f'{ln} = bound;')
            fn(3, 'if (rt_roundtrip(t, v, it, false))')
            fn(4, 'return -1;')
            fn(2, '}')
        fn(1, '}')
        if bad:
            _, _, dt = self.rndem.union_info(d)
            dn = f'v->{self.em.disc_name(d)}'
            cand = self.rndem.disc_candidate(dt)
            fn(1, '/* a discriminant that matches no case and no default */')
            fn(1, 'for (unsigned it = 0; it < 8; it++) {')
            fn(2, 'xdr_arena_reset(&t->va);')
            fn(2, 'v = rnd_alloc(r, sizeof(*v));')
            fn(2, f'{dn} = {cand};')
            fn(2, f'for (unsigned k = 0; k < 1000 && incase_{cn}({dn}); k++)')
            fn(3, f'{dn} = {cand};')
            fn(2, f'if (!incase_{cn}({dn}) && rt_baddisc(t, v, rtw_{cn}_disc))')
            fn(3, 'return -1;')
            fn(1, '}')
        fn(1, '(void)depth;')
        fn(1, '(void)bound;')
        out += [f'static int rtb_{cn}(struct rt *t)', '{'] + fn.lines + ['\treturn 0;', '}', '']
        return f'rtb_{cn}', out

    def emit(self):
        g, s = self.g, self.g.spec
        o = [f'/* Generated by tools/xdrgen.py from {os.path.basename(s.path)}: do not edit. */',
             '/* Round trip and hostile-input test of every type; see RT_MAIN in xdrgen.py. */',
             '#include <stdio.h>', '#include <stdlib.h>', '#include <string.h>', '',
             f'#include "{s.base}.h"']
        o += self.rndem.emit()
        types, rows = [], []
        for d in g.local_types():
            cn = cglobal(d.name)
            types += [f'static void rtr_{cn}(struct rnd *r, void *v, int hint)', '{',
                      f'\trndt_{cn}(r, v, 0, hint);', '}', '',
                      f'static int rtd_{cn}(struct xdr_dec *d, void *v)', '{',
                      f'\treturn xdr_dec_{cn}(d, v);', '}', '',
                      f'static int rte_{cn}(struct xdr_enc *e, const void *v)', '{']
            if isinstance(d, EnumDef) or (isinstance(d, TypedefDef) and d.name in RUNTIME_ALIASES):
                codec = 'enum' if isinstance(d, EnumDef) else d.name
                types.append(f'\treturn xdr_enc_{codec}(e, *(const {cn} *)v);')
            else:
                types.append(f'\treturn xdr_enc_{cn}(e, v);')
            types += ['}', '']
            bname, bcode = self.bounds_fn(d)
            types += bcode
            rows.append(f'\t{{ "{d.name}", sizeof({cn}), {self.rndem.narms(d)}, rtr_{cn}, rtd_{cn}, '
                        f'rte_{cn}, {bname or "NULL"} }},')
        types += ['static const struct rt_type rt_types[] = {'] + rows + ['};', '']
        o.append(RT_MAIN.replace('@BASE@', s.base).replace('@TYPES@', '\n'.join(types)))
        return '\n'.join(o)


# -------------------------------------------------------------- fuzzing

FUZZ_MAIN = r'''
/* ------------------------------------------------------------ the target */

struct fz_type {
	const char *name;
	size_t size;
	void (*rnd)(struct rnd *, void *, int);
	int (*dec)(struct xdr_dec *, void *);
	int (*enc)(struct xdr_enc *, const void *);
};

@TABLE@

#define FZ_NTYPES (sizeof(fz_types) / sizeof(fz_types[0]))
/* Selector: one byte, or two (big-endian) when there are more than 256 types. */
#define FZ_SEL (FZ_NTYPES > 256 ? 2u : 1u)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);
size_t braid_fuzz_seed(uint64_t seed, uint8_t *buf, size_t cap);

static uint8_t fz_first[1u << 16] __attribute__((aligned(8)));

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct fz_type *ft;
	struct xdr_arena a, ea;
	struct xdr_dec d;
	struct xdr_enc e;
	struct iovec *iov;
	uint8_t *out;
	size_t used, maxiov;
	void *v;
	int err;

	if (size < FZ_SEL)
		return 0;
	ft = &fz_types[(FZ_SEL == 2 ? (size_t)data[0] << 8 | data[1] : data[0]) % FZ_NTYPES];
	data += FZ_SEL;
	size -= FZ_SEL;
	xdr_arena_init(&a, fz_first, sizeof(fz_first), 1u << 20);
	v = xdr_arena_alloc(&a, ft->size);
	if (!v)
		abort();
	xdr_dec_init(&d, data, size, &a);
	err = ft->dec(&d, v);
	if (d.p < data || d.p > d.end || a.total > a.limit)
		abort();
	if (err) {
		xdr_arena_release(&a);
		return 0;
	}
	/* What decodes must encode to exactly the bytes consumed. */
	used = (size_t)(d.p - data);
	maxiov = used / 256 + 16;
	iov = calloc(maxiov, sizeof(*iov));
	out = malloc(used ? used : 1);
	if (!iov || !out)
		abort();
	xdr_arena_init(&ea, NULL, 0, (64u << 20) + 4 * used);
	xdr_enc_init(&e, iov, (unsigned)maxiov, NULL, 0, &ea);
	err = ft->enc(&e, v);
	if (err || e.err || e.len != used) {
		fprintf(stderr, "%s: decoded %zu bytes but encoding gives %zu (err %d)\n",
			ft->name, used, e.len, err);
		abort();
	}
	xdr_enc_flatten(&e, out);
	if (used && memcmp(out, data, used)) {
		fprintf(stderr, "%s: re-encoding differs from the input\n", ft->name);
		abort();
	}
	free(out);
	free(iov);
	xdr_arena_release(&ea);
	xdr_arena_release(&a);
	return 0;
}

/* One seed input: selector and a valid encoding of a random value. */
size_t braid_fuzz_seed(uint64_t seed, uint8_t *buf, size_t cap)
{
	size_t ti = (size_t)(seed % FZ_NTYPES), n = 0;
	const struct fz_type *ft = &fz_types[ti];
	struct xdr_arena va, ea;
	struct xdr_enc e;
	struct rnd r;
	struct iovec *iov;
	void *v;

	iov = calloc(4096, sizeof(*iov));
	if (!iov)
		abort();
	xdr_arena_init(&va, NULL, 0, 64u << 20);
	xdr_arena_init(&ea, NULL, 0, 64u << 20);
	r.s = seed * 0x9e3779b97f4a7c15ull + 0x62726169;
	r.a = &va;
	r.budget = 4096 + (size_t)(seed % 5) * 4096;
	v = rnd_alloc(&r, ft->size);
	ft->rnd(&r, v, (int)((seed / FZ_NTYPES) & 0x7fffffff));
	xdr_enc_init(&e, iov, 4096, NULL, 0, &ea);
	if (!ft->enc(&e, v) && e.len + FZ_SEL <= cap) {
		if (FZ_SEL == 2) {
			buf[0] = (uint8_t)(ti >> 8);
			buf[1] = (uint8_t)ti;
		} else {
			buf[0] = (uint8_t)ti;
		}
		xdr_enc_flatten(&e, buf + FZ_SEL);
		n = e.len + FZ_SEL;
	}
	xdr_arena_release(&va);
	xdr_arena_release(&ea);
	free(iov);
	return n;
}

/* Fill an empty $BRAID_FUZZ_SEED_DIR with valid inputs of every type. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("BRAID_FUZZ_SEED_DIR");
	size_t cap = 1u << 16, nseeds = FZ_NTYPES * 2 < 300 ? 300 : FZ_NTYPES * 2;
	struct dirent *de;
	uint8_t *buf;
	DIR *dh;

	(void)argc;
	(void)argv;
	if (!dir || !*dir)
		return 0;
	dh = opendir(dir);
	if (!dh)
		return 0;
	while ((de = readdir(dh)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			break;
	closedir(dh);
	if (de)
		return 0;
	buf = malloc(cap);
	if (!buf)
		abort();
	for (size_t i = 0; i < nseeds; i++) {
		size_t n = braid_fuzz_seed(i, buf, cap);
		char path[4096];
		FILE *f;

		if (!n)
			continue;
		snprintf(path, sizeof(path), "%s/seed-@BASE@-%05zu", dir, i);
		f = fopen(path, "wb");
		if (!f)
			break;
		fwrite(buf, 1, n, f);
		fclose(f);
	}
	free(buf);
	return 0;
}
'''


class FuzzEmitter:
    def __init__(self, g, rnd):
        self.g, self.rndem = g, rnd

    def emit(self):
        g, s = self.g, self.g.spec
        o = [f'/* Generated by tools/xdrgen.py from {os.path.basename(s.path)}: do not edit. */',
             '/* libFuzzer target over every decoder of the file; see FUZZ_MAIN in xdrgen.py. */',
             '#include <dirent.h>', '#include <stdio.h>', '#include <stdlib.h>', '#include <string.h>', '',
             f'#include "{s.base}.h"']
        o += self.rndem.emit()
        rows = []
        for d in g.local_types():
            cn = cglobal(d.name)
            o += [f'static void fzr_{cn}(struct rnd *r, void *v, int hint)', '{',
                  f'\trndt_{cn}(r, v, 0, hint);', '}', '',
                  f'static int fzd_{cn}(struct xdr_dec *d, void *v)', '{',
                  f'\treturn xdr_dec_{cn}(d, v);', '}', '',
                  f'static int fze_{cn}(struct xdr_enc *e, const void *v)', '{']
            if isinstance(d, EnumDef) or (isinstance(d, TypedefDef) and d.name in RUNTIME_ALIASES):
                codec = 'enum' if isinstance(d, EnumDef) else d.name
                o.append(f'\treturn xdr_enc_{codec}(e, *(const {cn} *)v);')
            else:
                o.append(f'\treturn xdr_enc_{cn}(e, v);')
            o += ['}', '']
            rows.append(f'\t{{ "{d.name}", sizeof({cn}), fzr_{cn}, fzd_{cn}, fze_{cn} }},')
        table = '\n'.join(['static const struct fz_type fz_types[] = {'] + rows + ['};'])
        o.append(FUZZ_MAIN.replace('@TABLE@', table).replace('@BASE@', s.base))
        return '\n'.join(o)


def template_idents(*texts):
    """Identifiers the C templates use as variables, functions, tags or types.

    A .x type or constant with one of these names would be shadowed by (or
    break) the template, so cglobal() adds a '_'.  Member names do not count.
    """
    out = set()
    for t in texts:
        t = re.sub(r'/\*.*?\*/', '', t, flags=re.S)
        t = re.sub(r'"(?:\\.|[^"\\])*"', '""', t)
        t = re.sub(r'\bstruct\s+\w+\s*\{.*?\n\};', '', t, flags=re.S)
        for m in re.finditer(r'(->|\.)?\s*\b([A-Za-z_]\w*)', t):
            if not m.group(1):
                out.add(m.group(2))
    return out - C_KEYWORDS - {'__attribute__', 'aligned', 'unused'}


GLOBAL_RESERVED |= template_idents(RND_HELPERS, RT_MAIN, FUZZ_MAIN)


# -------------------------------------------------------------------- main


def write(path, text):
    tmp = path + '.tmp'
    with open(tmp, 'w', encoding='utf-8') as f:
        f.write(text)
    os.replace(tmp, path)


def main(argv):
    ap = argparse.ArgumentParser(description='RFC 4506 XDR to C for Braid')
    ap.add_argument('--include-dir', action='append', default=[],
                    help='where to look for the .x of %%#include "X.h" (repeatable)')
    ap.add_argument('--out-dir', required=True)
    ap.add_argument('input')
    a = ap.parse_args(argv)
    sys.setrecursionlimit(10000)
    try:
        dirs = a.include_dir + [os.path.dirname(a.input) or '.']
        spec = parse_file(a.input, dirs, {})
        g = Gen(spec)
        if not g.local_types():
            raise XdrError(spec.path, 1, 'no types defined: nothing to generate codecs for')
        em = Emitter(g)
        h = em.header()
        c = em.source()
        rt = RtEmitter(g, RndEmitter(g)).emit()
        fz = FuzzEmitter(g, RndEmitter(g)).emit()
    except XdrError as e:
        print(f'xdrgen: {e}', file=sys.stderr)
        return 1
    os.makedirs(a.out_dir, exist_ok=True)
    base = os.path.join(a.out_dir, spec.base)
    write(base + '.h', h)
    write(base + '.c', c)
    write(base + '_rt.c', rt)
    write(base + '_fuzz.c', fz)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
