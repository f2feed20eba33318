"""Test fixtures for the framework: a fake offline source wheel and MLflow queries."""

from __future__ import annotations

import bz2
import zipfile
from pathlib import Path

from mlflow.tracking import MlflowClient

from stages.sources.registry import get

LEE_DOCS = [
    "The cat sat on the mat. It was happy!",
    "Dogs bark. Cats meow? Birds sing.",
    "One more document about the weather in Sydney.",
]

WIKI_XML = """<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/">
<page><title>Alpha</title><ns>0</ns><revision><text>Lead of alpha.
== History ==
Alpha history. The Phoenician letter aleph became alpha when the Greeks adopted the
alphabet around 800 BC, and the scholar Aristotle later wrote that the letter had been
used for counting as well as for writing words in the cities of Athens and Corinth.</text></revision></page>
<page><title>Gamma</title><ns>0</ns><revision><text>Gamma is a letter of the Greek alphabet.
== Usage ==
Gamma is used in physics for radiation. In 1900 the chemist Paul Villard found a new kind of
radiation from radium, and in 1903 Ernest Rutherford named it gamma radiation because it
was the third kind he had studied after alpha and beta rays in his laboratory in Montreal.
== Typography ==
The letter gamma has an upper case and a lower case form.</text></revision></page>
<page><title>Delta</title><ns>0</ns><revision><text>Delta is a river landform.
== Formation ==
A delta forms where a river deposits sediment into the sea. The Nile delta in Egypt covers
about 240 kilometres of coastline, and the Greek historian Herodotus described it around
450 BC, naming the landform after the shape of the letter delta in his own alphabet.</text></revision></page>
<page><title>Talk:Alpha</title><ns>1</ns><revision><text>talk</text></revision></page>
<page><title>Beta</title><ns>0</ns><revision><text>#REDIRECT [[Alpha]]</text></revision></page>
</mediawiki>"""


def make_fake_sources(root: Path, lee_docs: list[str] = LEE_DOCS) -> Path:
    """A sources dir holding a tiny stand-in for the gensim wheel (same member paths)."""
    src = get("gensim_lee")
    folder = root / src.folder
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{src.package}-{src.version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr(src.members[0], "\n".join(lee_docs) + "\n")
        zf.writestr(get("gensim_wiki").members[0], bz2.compress(WIKI_XML.encode()))
    return root


def runs_of_latest_pipeline(root: Path) -> tuple[dict, dict[str, dict]]:
    """(parent run, {stage: child run}) of the most recent pipeline run under ``root``."""
    client = MlflowClient(f"sqlite:///{root}/mlflow.db")
    exp = client.get_experiment_by_name("nugget-pipeline")
    parents = client.search_runs(
        [exp.experiment_id],
        filter_string="tags.entry != ''",
        order_by=["attributes.start_time DESC"],
        max_results=1,
    )
    parent = parents[0]
    children = client.search_runs(
        [exp.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{parent.info.run_id}'"
    )
    return parent, {c.data.tags["stage"]: c for c in children}
