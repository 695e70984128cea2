"""Find the shipped parameter files (per model, the controllers) in a checkout or an install."""

from pathlib import Path

PACKAGE = 'sequence_ai_ros'
# A source checkout (and an editable install) keeps config/ beside the package.
_CHECKOUT_CONFIG = Path(__file__).resolve().parents[2] / 'config'


def config_dirs() -> list[Path]:
    """Return the directories that may hold `<model>.yaml`, the checkout's first."""
    dirs = [_CHECKOUT_CONFIG]
    try:
        from ament_index_python.packages import get_package_share_directory
    except ImportError:  # plain pip: no ament index, only the checkout
        return dirs
    try:
        dirs.append(Path(get_package_share_directory(PACKAGE)) / 'config')
    except (LookupError, OSError, ValueError):  # not installed, or no AMENT_PREFIX_PATH
        pass
    return dirs


def config_name(model: str) -> str:
    """Return the file name of a model's parameters: `pi05-droid` -> `pi05_droid.yaml`."""
    return model.rsplit('/', 1)[-1].replace('-', '_') + '.yaml'


def config_file(model: str) -> Path:
    """Return the parameter file of `model`; FileNotFoundError lists where it was looked for."""
    return find_config(config_name(model))


def find_config(relative: str) -> Path:
    """Return config/`relative` from the checkout or the installed share directory."""
    dirs = config_dirs()
    for directory in dirs:
        if (directory / relative).is_file():
            return directory / relative
    raise FileNotFoundError(f'no {relative} in {", ".join(str(d) for d in dirs)}')
