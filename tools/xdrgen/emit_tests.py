# SPDX-License-Identifier: MIT
"""The tests of the codecs: NAME_rt.c (round trip) and NAME_fuzz.c (libFuzzer).

Both build random valid values with RndEmitter; the fixed C around them is
in templates.py.
"""

import os

from .analysis import Ext
from .emit_c import Emitter, Fn, addr, call, finish, member
from .model import (EnumDef, Fixed, OpaqueFixed, OpaqueVar, Opt, Prim, Ref, String, StructDef,
                    TypedefDef, UnionDef, VarArr, Void)
from .names import RUNTIME_ALIASES, cglobal
from .templates import FUZZ_MAIN, RND_HELPERS, RT_MAIN


# ------------------------------------------------- random values (rt, fuzz)


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
