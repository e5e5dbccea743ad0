# SPDX-License-Identifier: MIT
"""Builds nearby's Python package: the extension compiles the C library's own sources (the list
in the top-level CMakeLists.txt's NB_SOURCES) together with python/src/*.c, so it needs no
installed library and no CMake, only a C compiler, Python's headers and numpy's.

    python3 -m venv --system-site-packages venv
    venv/bin/pip install --no-build-isolation ./python
"""
import os
import re

import numpy
from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def read(*parts):
    with open(os.path.join(*parts), encoding="utf-8") as f:
        return f.read()


def library():
    """The version and the library's source files, from the CMakeLists.txt that builds it."""
    try:
        cmake = read(ROOT, "CMakeLists.txt")
    except OSError:
        raise SystemExit("setup.py: build from the nearby source tree: ../CMakeLists.txt and "
                         "../src are needed next to python/")
    version = re.search(r"project\(nearby VERSION (\d+)\.(\d+)\.(\d+)", cmake).groups()
    sources = re.search(r"set\(NB_SOURCES([^)]*)\)", cmake).group(1).split()
    return version, [os.path.join(ROOT, s) for s in sources]


def version_header(version):
    """Writes nb_version.h, as CMake's configure_file would, into build/generated."""
    out_dir = os.path.join(HERE, "build", "generated", "nearby")
    os.makedirs(out_dir, exist_ok=True)
    text = read(ROOT, "include", "nearby", "nb_version.h.in")
    for key, value in (("MAJOR", version[0]), ("MINOR", version[1]), ("PATCH", version[2])):
        text = text.replace("@PROJECT_VERSION_%s@" % key, value)
    text = text.replace("@PROJECT_VERSION@", ".".join(version))
    path = os.path.join(out_dir, "nb_version.h")
    if not os.path.exists(path) or read(path) != text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return os.path.dirname(out_dir)


version, lib_sources = library()
ext_sources = [os.path.join(HERE, "src", f) for f in ("module.c", "grid.c", "hash.c", "quadtree.c",
                                                      "tiles.c")]
extension = Extension(
    "nearby._nearby",
    sources=ext_sources + lib_sources,
    include_dirs=[version_header(version), os.path.join(ROOT, "include"), numpy.get_include()],
    # NB_STATIC_DEFINE: the library's symbols stay inside the extension (hidden visibility).
    define_macros=[("NB_STATIC_DEFINE", "1"), ("NDEBUG", "1")],
    # The library's rules: C11, -ffp-contract=off so `d2 <= r*r` is the same as in the C
    # builds, never -ffast-math; -O3 as its Release build; -g0 (Python's flags ask for -g):
    # a 200 KB module instead of 1.5 MB, and a faster install. Python's own -fwrapv and
    # -fstack-protector-strong are undone, as the library's Release build has neither: with
    # them its walkers ran about 12% more instructions (all pairs, measured with callgrind).
    extra_compile_args=["-std=c11", "-O3", "-g0", "-ffp-contract=off", "-fvisibility=hidden",
                        "-fno-wrapv", "-fno-stack-protector"],
    libraries=["m"],
)

setup(
    name="nearby",
    version=".".join(version),
    description="Exact fixed-radius and k-nearest neighbour queries over numpy arrays, "
    "shaped like scipy's cKDTree",
    license="MIT",
    packages=["nearby"],
    ext_modules=[extension],
    install_requires=["numpy"],
    python_requires=">=3.8",
    zip_safe=False,
    # Compile the dozen sources two at a time (pip install runs setup.py build_ext).
    options={"build_ext": {"parallel": min(2, os.cpu_count() or 1)}},
)
