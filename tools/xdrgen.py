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

The code is the package tools/xdrgen/, in pipeline order:
  parser.py      lexer and parser: .x text to a Spec
  model.py       the definitions and type expressions the parser builds
  analysis.py    Gen: resolves names, constants and types, checks, sizes
  emit_c.py      Emitter: NAME.h and NAME.c
  emit_tests.py  RndEmitter, RtEmitter, FuzzEmitter: NAME_rt.c, NAME_fuzz.c
  templates.py   the fixed C of NAME_rt.c and NAME_fuzz.c
  names.py       XdrError, reserved C names and cglobal()
"""

import argparse
import os
import sys

# The package next to this file (a directory wins over xdrgen.py on import).
# No __pycache__ in the source tree, which may be read-only (distcheck).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

from xdrgen.analysis import Gen
from xdrgen.emit_c import Emitter
from xdrgen.emit_tests import FuzzEmitter, RndEmitter, RtEmitter
from xdrgen.names import XdrError
from xdrgen.parser import parse_file


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
