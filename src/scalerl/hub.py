"""Whether the Hugging Face hub can serve a model or a dataset right now.

A name that is not a local path but looks like a hub id is sent to the hub, and with no network
huggingface_hub retries for ~25-50 s (printing each retry) before it fails. One short TCP probe
tells first whether trying is worth it; what is already in the local cache loads offline.
"""

from __future__ import annotations

from pathlib import Path


def _cached(repo_id: str, repo_type: str) -> bool:
    """Whether ``repo_id`` has files in the local caches (a model: its config.json in the hub cache; a
    dataset: its folder in the hub cache or in the ``datasets`` library's own)."""
    from huggingface_hub import constants, try_to_load_from_cache

    if repo_type == "model":
        try:
            return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
        except Exception:  # noqa: BLE001 -- an id the hub would refuse; the loader says why
            return True
    folder = Path(constants.HF_HUB_CACHE) / f"datasets--{repo_id.replace('/', '--')}"
    if folder.is_dir():
        return True
    try:
        from datasets import config as datasets_config
        from datasets.naming import camelcase_to_snakecase
    except ImportError:
        return False
    # Named as datasets' CachedDatasetModuleFactory names it: owner___snake_cased_name ("MyOrg/MathData":
    # MyOrg___math_data), and the plain name too.
    *owner, name = repo_id.split("/")
    names = {"___".join([*owner, name]), "___".join([*owner, camelcase_to_snakecase(name)])}
    return any((Path(datasets_config.HF_DATASETS_CACHE) / n).is_dir() for n in names)


def _proxied(scheme: str, host: str) -> bool:
    """Whether requests to ``host`` go through a proxy: one set for its scheme (``HTTPS_PROXY`` for an https
    endpoint, ``HTTP_PROXY`` for http) or ``ALL_PROXY``, and the host not in ``NO_PROXY`` -- read as the
    standard library reads them, as the hub client's HTTP library does."""
    from urllib.request import getproxies_environment, proxy_bypass_environment

    proxies = getproxies_environment()
    return bool(proxies.get(scheme) or proxies.get("all")) and not proxy_bypass_environment(host, proxies)


def hub_unreachable(repo_id: str, repo_type: str = "model", timeout: float = 3.0) -> str | None:
    """Why the hub cannot serve ``repo_id`` (a ``"model"`` or a ``"dataset"``) right now -- offline mode,
    no connection -- or None (also when it is in the local cache, which serves it offline).

    The probe is one TCP connection to the endpoint (``HF_ENDPOINT``), bounded by ``timeout``; none where
    the endpoint is reached through a proxy (:func:`_proxied`), as a machine may reach the hub and nothing else.
    """
    import socket
    from urllib.parse import urlparse

    from huggingface_hub import constants

    if _cached(repo_id, repo_type):
        return None
    if constants.HF_HUB_OFFLINE:
        return "HF_HUB_OFFLINE is set"
    url = urlparse(constants.ENDPOINT)
    host, port = url.hostname or "huggingface.co", url.port or (443 if url.scheme == "https" else 80)
    if _proxied(url.scheme, host):  # the hub is reached through a proxy: a direct connection tells nothing
        return None
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        return f"the hub ({host}) cannot be reached: {exc.strerror or exc}"
    return None
