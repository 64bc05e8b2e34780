"""A checked, resumable download of one pinned file (``clnn models fetch``'s wheel).

pooch checks the SHA-256 and moves the file into place only when it matches. pooch itself
starts every download from byte 0, so the downloader given to it here keeps the bytes
received so far in ``<file>.part`` beside the target and asks the server for the rest with an
HTTP ``Range`` request: an interrupted 35 MB download goes on where it stopped.
"""

from __future__ import annotations

import os
import shutil


class DownloadError(RuntimeError):
    pass


def _append_rest(url: str, part: str, size: int | None, progress: bool, timeout: float):
    """Append to ``part`` the bytes of ``url`` after those already in it."""
    import requests
    from tqdm import tqdm

    have = os.path.getsize(part) if os.path.exists(part) else 0
    if size is not None and have >= size:
        return
    headers = {"Range": f"bytes={have}-"} if have else {}
    with requests.get(url, headers=headers, stream=True, timeout=timeout) as r:
        if r.status_code == 416:  # nothing after ``have``: the hash check decides
            return
        r.raise_for_status()
        if have and r.status_code != 206:  # the server sent it all again: start over
            have = 0
        with open(part, "ab" if have else "wb") as f, \
                tqdm(total=size, initial=have, unit="B", unit_scale=True,
                     disable=not progress, leave=False) as bar:
            for chunk in r.iter_content(chunk_size=1 << 16):
                f.write(chunk)  # written at once: what came before an interruption is kept
                bar.update(len(chunk))


def fetch_file(url: str, sha256: str, path: str, size: int | None = None,
               progress: bool = False, timeout: float = 60.0) -> str:
    """Download ``url`` to ``path`` unless ``path`` already has ``sha256``; resumes from
    ``path + '.part'``. A DownloadError names the URL when the server or the bytes are wrong
    (a part whose bytes do not add up to the right file is removed, so the next try starts
    afresh)."""
    import pooch
    import requests

    part = path + ".part"
    pooch.get_logger().setLevel("WARNING")  # the caller says what it downloads, once

    def downloader(url, output_file, pooch_obj, check_only=False):
        # pooch hands a temporary file to fill; the bytes live in ``part`` until complete
        _append_rest(url, part, size, progress, timeout)
        shutil.copyfile(part, output_file)

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    try:
        out = pooch.retrieve(url, known_hash=f"sha256:{sha256}", path=os.path.dirname(path)
                             or ".", fname=os.path.basename(path), downloader=downloader)
    except ValueError as e:  # pooch: the hash does not match
        if os.path.exists(part):
            os.remove(part)
        raise DownloadError(f"{url} gave a file whose SHA-256 is not {sha256} ({e}); "
                            "the partial download was removed, run again to start afresh") \
            from None
    except requests.RequestException as e:
        raise DownloadError(f"cannot download {url}: {e} (what arrived is kept in {part} "
                            "and the next try resumes from it)") from None
    if os.path.exists(part):
        os.remove(part)
    return out
