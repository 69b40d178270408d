# SPDX-License-Identifier: MIT
"""The XDR code generator run by tools/xdrgen.py, which lists its modules."""
