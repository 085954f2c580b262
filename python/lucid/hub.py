"""torch.hub's checkpoint downloads: ``load_state_dict_from_url`` fetches a
checkpoint once into ``<hub dir>/checkpoints`` (PyTorch's cache: ``$TORCH_HOME/hub``,
by default ``~/.cache/torch/hub``, so files PyTorch downloaded are reused)
and loads it with ``lucid.load``. Loading models from GitHub repositories
(``load``, ``list``, ``help``) runs the repository's own code written for
PyTorch and is not supported."""
import hashlib
import os
import re
import shutil
import sys
import tempfile
import urllib.parse
import urllib.request

from .serialization import load as _load

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url", "set_dir"]

_hub_dir = None
# A file name's hash prefix, as PyTorch's: resnet18-5c106cde.pth -> 5c106cde.
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")


def get_dir():
    """The hub's folder: set_dir's, else $TORCH_HOME/hub, else $XDG_CACHE_HOME/torch/hub."""
    if _hub_dir is not None:
        return _hub_dir
    torch_home = os.environ.get("TORCH_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.join(os.path.expanduser("~"), ".cache")), "torch")
    return os.path.join(os.path.expanduser(torch_home), "hub")


def set_dir(d):
    global _hub_dir
    _hub_dir = os.path.expanduser(d)


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    """Downloads ``url`` to ``dst`` (through a temporary file in the same
    folder); with ``hash_prefix``, the SHA-256 of the file must start with it."""
    dst = os.path.expanduser(dst)
    folder = os.path.dirname(os.path.abspath(dst))
    os.makedirs(folder, exist_ok=True)
    sha256 = hashlib.sha256()
    with tempfile.NamedTemporaryFile(delete=False, dir=folder) as tmp:
        try:
            request = urllib.request.Request(url, headers={"User-Agent": "torch.hub"})
            with urllib.request.urlopen(request) as response:
                total = response.headers.get("Content-Length")
                done = 0
                while True:
                    chunk = response.read(1 << 16)
                    if not chunk:
                        break
                    tmp.write(chunk)
                    sha256.update(chunk)
                    done += len(chunk)
                    if progress and total:
                        sys.stderr.write(f"\r{100 * done // int(total):3d}% of {url}")
            if progress and total:
                sys.stderr.write("\n")
            tmp.close()
            if hash_prefix is not None:
                digest = sha256.hexdigest()
                if digest[:len(hash_prefix)] != hash_prefix:
                    raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{digest}")')
            shutil.move(tmp.name, dst)
        finally:
            if os.path.exists(tmp.name):
                os.remove(tmp.name)


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True, check_hash=False,
                             file_name=None, weights_only=False):
    """The checkpoint at ``url``, downloaded once into ``model_dir`` (default
    ``<hub dir>/checkpoints``) and loaded with ``lucid.load``. With
    ``check_hash``, the file name's ``-<hex>.`` part must prefix its SHA-256."""
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name or os.path.basename(urllib.parse.urlparse(url).path)
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        sys.stderr.write(f'Downloading: "{url}" to {cached_file}\n')
        hash_prefix = None
        if check_hash:
            match = HASH_REGEX.search(filename)
            hash_prefix = match.group(1) if match else None
        download_url_to_file(url, cached_file, hash_prefix, progress=progress)
    return _load(cached_file, map_location=map_location, weights_only=weights_only)


def _unsupported(name):
    def call(*args, **kwargs):
        raise NotImplementedError(f"torch.hub.{name}: loading models from repositories runs code written for "
                                  "PyTorch; Lucid loads checkpoints (load_state_dict_from_url)")
    call.__name__ = name
    return call


load = _unsupported("load")
list = _unsupported("list")  # noqa: A001
help = _unsupported("help")  # noqa: A001
