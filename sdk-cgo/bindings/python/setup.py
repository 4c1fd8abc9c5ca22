"""Bundles libspool into the package, as confluent-kafka's wheels bundle librdkafka, so that
`import spool` works in any shell, without SPOOL_LIBRARY or PKG_CONFIG_PATH.

The library comes from $SPOOL_LIBRARY (a path to libspool.so.0) when set, else from the
repository's `make build` output (sdk-cgo/build/libspool.so.0), else from pkg-config's
libdir of spool. Without any of them the build fails, saying so: a package that cannot load
its library is not installed silently. The wheel is tagged for this platform, since it holds
a native library.
"""

import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

LIBRARY = "libspool.so.0"
HERE = os.path.dirname(os.path.abspath(__file__))


def find_libspool():
    path = os.environ.get("SPOOL_LIBRARY")
    if path:
        if not os.path.exists(path):
            raise SystemExit(f"SPOOL_LIBRARY={path}: no such file")
        return path
    built = os.path.join(HERE, "..", "..", "build", LIBRARY)
    if os.path.exists(built):
        return built
    try:
        libdir = subprocess.run(["pkg-config", "--variable=libdir", "spool"], capture_output=True,
                                text=True, check=True).stdout.strip()
        if os.path.exists(os.path.join(libdir, LIBRARY)):
            return os.path.join(libdir, LIBRARY)
    except (OSError, subprocess.CalledProcessError):
        pass
    raise SystemExit("libspool not found to bundle: run `make build` in the repository first "
                     "(sdk-cgo/build/libspool.so.0), or set SPOOL_LIBRARY to a libspool.so.0")


class BuildWithLibspool(build_py):
    def run(self):
        super().run()
        dest = os.path.join(self.build_lib, "spool", LIBRARY)
        shutil.copyfile(find_libspool(), dest)  # the file, not a symlink to it
        os.chmod(dest, 0o755)


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildWithLibspool}, distclass=BinaryDistribution)
