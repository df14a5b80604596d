"""A corpus analysis's inputs on a page: the corpus file (an upload, or a path on one's own machine), its lines as
every corpus analysis reads them, where its results are cached, and where the job runs (this process, local Ray
workers or a cluster), with a word after it when Ray retried a shard."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from explorer.analyses.corpus import shipped_analyses
from explorer.analyses.corpus.corpus import corpus_examples
from explorer.figures.common import plural
from explorer.models.data import file_bytes
from explorer.pages.components.access import policy, quoted, refuse


def ray_settings(prefix: str) -> tuple[int, str]:
    """Where a long recompute runs: this process (1 worker), N local worker processes, or a Ray cluster. On a
    shared server, where the host set it at start (visitors choose neither)."""
    if policy().serving:
        workers, address = policy().workers, policy().ray_address
        where = f"on the Ray cluster at {address}" if address else ("in the server's own process" if workers <= 1
                                                                     else "on a local Ray")
        st.caption(f"Runs {where}" + (f" with {workers} workers" if workers > 1 else "") + ", as this server's host "
                   "set it.")
        return workers, address
    left, right = st.columns([1, 3])
    workers = left.number_input("Workers", 1, 256, 1, key=f"{prefix}_workers", persist_state="session",
                                help="More than 1 splits the corpus over worker processes on Ray (a local Ray "
                                     "starts when no address is given).")
    address = right.text_input("Ray cluster address (optional)", key=f"{prefix}_ray_address", persist_state="session",
                               placeholder="HOST:6379, as `ray start --head` prints",
                               help="The model's folder must be readable at the same path on the cluster's nodes.")
    return int(workers), address.strip()


def remember_retries(runner, where: str) -> None:
    """Keep, for show_retries, how many of a corpus job's shards Ray gave to a fresh worker after one died."""
    if runner is not None and runner.retried:
        st.session_state[f"_retried_{where}"] = runner.retried


def show_retries(where: str) -> None:
    """Say once, where the job was started, that it finished with retried shards."""
    retried = st.session_state.pop(f"_retried_{where}", 0)
    if retried:
        st.info(f"The last corpus job finished after {plural(retried, 'shard')} {'was' if retried == 1 else 'were'} "
                "retried on a fresh Ray worker (a worker died); every shard was counted once.")


@dataclass(frozen=True)
class CorpusChoice:
    """A corpus file chosen on a page: an upload, else a file on the server (a path typed on one's own machine,
    the bundled default when served)."""
    upload: object = None       # Streamlit's UploadedFile
    path: str = ""

    def __bool__(self) -> bool:
        return self.upload is not None or bool(self.path)

    def read(self) -> tuple[bytes, str, str]:
        """(bytes, name for messages, name to show); a CorpusError naming the file when it cannot be read."""
        if self.upload is not None:
            return self.upload.getvalue(), self.upload.name, self.upload.name
        if self.path:
            return file_bytes(self.path), self.path, Path(self.path).name
        return b"", "", ""


def corpus_lines(source: CorpusChoice, reference: CorpusChoice | None, limit: int):
    """The first `limit` lines of a chosen corpus (with its aligned references, for a translation model) as every
    corpus analysis reads them (explorer/analyses/corpus/corpus.py), and its name to show; a CorpusError naming the
    person's own file when it cannot be used."""
    data, source_name, shown = source.read()
    reference_data, reference_name, _ = reference.read() if reference is not None else (None, "", "")
    return (*corpus_examples(data, source_name, reference_data, reference_name, limit), shown)


def analysis_folder(*choices: CorpusChoice | None) -> Path | None:
    """Where a corpus analysis is cached on disk: the usual folder, except for a shared server's visitor uploads,
    which are never written to its disk (their results stay in the visitor's session)."""
    uploaded = any(choice is not None and choice.upload is not None for choice in choices)
    return None if policy().serving and uploaded else shipped_analyses.CACHE


def corpus_file(label: str, key: str, default: Path | str = "", where=st) -> CorpusChoice:
    """An upload and, beside it, a file's path on the server, pre-filled with `default` (the upload wins). Served,
    there is no path box: the default is used unless the visitor uploads a file (size-capped)."""
    upload_column, path_column = where.columns(2)
    if not policy().serving:
        upload = upload_column.file_uploader(label, key=key)
        path = path_column.text_input("… or its path on the server", str(default), key=f"{key}_path",
                                      help="Used when nothing is uploaded beside it; empty: none.")
        return CorpusChoice(upload, path.strip())
    cap = policy().upload_mb
    upload = upload_column.file_uploader(f"{label} (at most {cap} MB)", key=key, max_upload_size=cap)
    if upload is not None and upload.size > cap * 2**20:
        refuse(f"{quoted(upload.name)} is {upload.size / 2**20:.1f} MB: this server takes uploads up to {cap} MB.",
               f"upload {quoted(upload.name)} ({upload.size:,} bytes)", where=path_column)
        return CorpusChoice()
    if upload is None:
        path_column.caption(f"Nothing uploaded: the bundled {Path(default).name} is used." if default else
                            "Nothing uploaded: none.")
    return CorpusChoice(upload, str(default) if upload is None else "")
