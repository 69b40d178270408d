# SPDX-License-Identifier: MIT
"""Analysis: names, constants and types of a Spec and its imports, checked and sized."""

from .model import (Arm, ConstDef, EnumDef, Fixed, OpaqueFixed, OpaqueVar, Opt, Prim,
                    ProgramDef, Ref, String, StructDef, TypedefDef, UnionDef, VarArr)
from .names import (BUILTIN_TYPEDEFS, FIELD_RESERVED, PRIM_C, PRIM_WIRE, PRIM_XDR,
                    RUNTIME_ALIASES, XdrError, cglobal)


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
