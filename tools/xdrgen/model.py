# SPDX-License-Identifier: MIT
"""What the parser builds: type expressions and definitions of one .x file."""


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
