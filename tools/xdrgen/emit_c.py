# SPDX-License-Identifier: MIT
"""C codecs: NAME.h (types, constants, prototypes, program tables) and NAME.c."""

import os
import re

from .model import (ConstDef, EnumDef, Fixed, OpaqueFixed, OpaqueVar, Opt, Prim, ProgramDef,
                    Ref, String, StructDef, TypedefDef, UnionDef, VarArr, Void)
from .names import PRIM_C, PRIM_CODEC, RUNTIME_ALIASES, c_ident, cglobal


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
