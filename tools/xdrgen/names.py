# SPDX-License-Identifier: MIT
"""Errors, and the names that C and the runtime reserve (cglobal() dodges them)."""

import errno as _errno
import re

from .templates import FUZZ_MAIN, RND_HELPERS, RT_MAIN


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
