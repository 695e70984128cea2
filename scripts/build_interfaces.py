"""
Generate the test-only control_msgs interfaces into a ROS 2 venv, with that venv's rosidl wheels.

Usage: VENV/bin/python scripts/build_interfaces.py [--missing-debs]

control_msgs is not on PyPI. The tests that drive a gripper or a trajectory controller by its
action need its types, so `make venv` builds test/interfaces/control_msgs (the project's own
definitions, upstream's type names and fields) with the rosidl generators and ament_cmake
wheels of the venv's distribution (test/interfaces/requirements-<distro>.txt) and installs it
into the venv's prefix beside the message wheels: the Python package in site-packages, its
libraries in <venv>/lib, which the wheels' bootstrap puts on LD_LIBRARY_PATH for every Python
process of the venv. The build is skipped while its inputs (definitions, wheel versions,
interpreter) are unchanged. --missing-debs prints the Debian packages the build lacks.
test/interfaces/COLCON_IGNORE keeps colcon and rosdep from taking the package for part of a
workspace, where it would shadow a ROS install's real control_msgs.
"""

import argparse
import hashlib
import importlib.metadata
import os
from pathlib import Path
import shutil
import subprocess
import sys
import sysconfig

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / 'test' / 'interfaces' / 'control_msgs'
PACKAGE = 'control_msgs'
# What a test uses: the types and their C type support (loading it needs the libraries).
CHECK = ('from control_msgs.action import FollowJointTrajectory as F, GripperCommand as G, '
         'ParallelGripperCommand as P; from control_msgs.msg import JointTolerance as J\n'
         'for kind in (F, G, P, J): type(kind).__import_type_support__()\n'
         'assert G._TYPE_SUPPORT is not None, G')
# Each tool the build runs -> the Debian package that provides it.
TOOLS = {'cmake': 'cmake', 'ninja': 'ninja-build', 'cc': 'gcc', 'c++': 'g++'}


def missing_debs() -> list[str]:
    """Return the Debian packages to install before the build can run (empty if none)."""
    debs = [deb for tool, deb in TOOLS.items() if shutil.which(tool) is None]
    include = Path(sysconfig.get_paths()['include'])
    if not (include / 'Python.h').is_file():
        debs.append(f'python{sys.version_info.major}.{sys.version_info.minor}-dev')
    return debs


def inputs_digest() -> str:
    """Return a digest of what the generated code depends on: sources, wheels, interpreter."""
    digest = hashlib.sha256(sys.version.encode())
    for path in sorted(p for p in SOURCE.rglob('*') if p.is_file()):
        digest.update(str(path.relative_to(SOURCE)).encode() + b'\0' + path.read_bytes())
    digest.update(Path(__file__).read_bytes())
    versions = sorted(f'{dist.metadata["Name"]}=={dist.version}'
                      for dist in importlib.metadata.distributions()
                      if (dist.metadata['Name'] or '').lower().startswith('ros-'))
    digest.update('\n'.join(versions).encode())
    return digest.hexdigest()


def importable(prefix: Path) -> bool:
    """Return whether a new interpreter of the venv imports the generated types."""
    result = subprocess.run([str(prefix / 'bin' / 'python'), '-c', CHECK],
                            capture_output=True, text=True, timeout=120)
    return result.returncode == 0


def run(args: list[str], log: Path, env: dict[str, str]) -> None:
    """Run a build step with its output in `log`; on failure, exit showing the log's tail."""
    with log.open('w') as out:
        code = subprocess.run(args, stdout=out, stderr=subprocess.STDOUT, env=env).returncode
    if code != 0:
        tail = '\n'.join(log.read_text().splitlines()[-40:])
        sys.exit(f'{" ".join(args[:2])} failed ({code}); the end of {log}:\n{tail}')


def remove_previous_install(build: Path) -> None:
    """Delete the files the last build installed, so a type that was removed goes too."""
    manifest = build / 'install_manifest.txt'
    if manifest.is_file():
        for line in manifest.read_text().splitlines():
            Path(line).unlink(missing_ok=True)


def build(prefix: Path, build_dir: Path) -> None:
    """Configure, build and install the package into `prefix`."""
    env = dict(os.environ)
    # The generators are Python scripts run by CMake: they must be this venv's.
    env['PATH'] = os.pathsep.join([str(prefix / 'bin'), env.get('PATH', '')])
    env['AMENT_PREFIX_PATH'] = str(prefix)
    cache = build_dir / 'CMakeCache.txt'
    if cache.is_file():
        cache.unlink()  # a changed wheel must be found afresh
    generator = ['-G', 'Ninja'] if shutil.which('ninja') else []
    run(['cmake', '-S', str(SOURCE), '-B', str(build_dir), *generator,
         f'-DCMAKE_PREFIX_PATH={prefix}', f'-DCMAKE_INSTALL_PREFIX={prefix}',
         f'-DPython3_EXECUTABLE={prefix / "bin" / "python"}',
         '-DBUILD_TESTING=OFF', '-DCMAKE_BUILD_TYPE=Release'],
        build_dir.parent / 'configure.log', env)
    run(['cmake', '--build', str(build_dir)], build_dir.parent / 'build.log', env)
    remove_previous_install(build_dir)
    run(['cmake', '--install', str(build_dir)], build_dir.parent / 'install.log', env)


def main() -> int:
    """Build the interfaces if their inputs changed; return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0].strip())
    parser.add_argument('--missing-debs', action='store_true',
                        help='print the Debian packages the build needs and lacks, and exit')
    args = parser.parse_args()
    if args.missing_debs:
        print(' '.join(missing_debs()))
        return 0
    lacking = missing_debs()
    if lacking:
        sys.exit(f'building {PACKAGE} needs: apt-get install {" ".join(lacking)}')
    prefix = Path(sys.prefix)
    work = prefix / '.interfaces'
    stamp = work / 'inputs.sha256'
    digest = inputs_digest()
    if stamp.is_file() and stamp.read_text() == digest and importable(prefix):
        print(f'{PACKAGE}: up to date in {prefix}')
        return 0
    work.mkdir(parents=True, exist_ok=True)
    stamp.unlink(missing_ok=True)
    print(f'{PACKAGE}: generating from {SOURCE.relative_to(REPO)} into {prefix}', flush=True)
    build(prefix, work / 'build')
    if not importable(prefix):
        sys.exit(f'{PACKAGE} was built and installed into {prefix} but does not import: '
                 f'{prefix / "bin" / "python"} -c "{CHECK}"')
    stamp.write_text(digest)
    return 0


if __name__ == '__main__':
    sys.exit(main())
