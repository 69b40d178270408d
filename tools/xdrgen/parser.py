# SPDX-License-Identifier: MIT
"""Lexer and parser: RFC 4506 text to a Spec of model definitions."""

import os
import re

from .model import (Anon, Arm, ConstDef, Decl, EnumDef, Fixed, OpaqueFixed, OpaqueVar, Opt,
                    Prim, Proc, ProgramDef, Ref, String, StructDef, TypedefDef, UnionDef, Val,
                    VarArr, Version, Void)
from .names import BUILTIN_TYPEDEFS, XDR_KEYWORDS, XdrError


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
