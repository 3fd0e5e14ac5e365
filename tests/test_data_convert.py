"""Data preparation: every benchmark and training set from local files into verl's schema, the papers' templates,
Hub names through `datasets` (stubbed here), clear errors, and verl's own dataset class reading the output."""

import json
import os

import pandas as pd
import pytest

from rlvr_recipes.launch.data import DATASETS, TEMPLATES, load_table, main, to_verl
from rlvr_recipes.reward.math_reward import compute_score

RAW = os.path.join(os.path.dirname(__file__), "fixtures", "raw")

# dataset -> (fixture, ground truths the fixture's rows state, in order)
CASES = {
    "math": ("math_lighteval.jsonl", ["\\frac{3}{4}", "2", "[1, \\infty)", "5\\sqrt{2}"]),  # from \boxed{} in solutions
    "math500": ("math500.jsonl", ["15", "\\frac{\\pi}{2}", "(2,3)", "25\\%"]),
    "gsm8k": ("gsm8k.jsonl", ["7", "2000", "50"]),  # after ####, commas dropped
    "aime24": ("aime24.json", ["376", "16"]),
    "aime25": ("aime25.jsonl", ["70", "117"]),
    "amc23": ("amc23.jsonl", ["8", "27"]),  # 8.0 and 27.0 in the file
    "minerva": ("minerva.jsonl", ["\\frac{2}{7}", "3"]),
    "olympiadbench": ("olympiadbench.jsonl", ["3, -3", "3", "\\frac{1}{2}"]),  # lists of $...$ answers
    "open_rs": ("open_rs.jsonl", ["58", "144"]),
    "deepscaler": ("deepscaler.json", ["21", "5"]),
}


def test_every_dataset_of_the_papers_has_a_case():
    assert set(CASES) == set(DATASETS)


@pytest.mark.parametrize("dataset", sorted(CASES))
def test_convert_each_dataset(dataset, tmp_path, capsys):
    fixture, truths = CASES[dataset]
    out = tmp_path / f"{dataset}.parquet"
    main(["convert", "--dataset", dataset, "--input", os.path.join(RAW, fixture), "--split", "test",
          "--output", str(out)])
    printed = capsys.readouterr()
    assert f"wrote {len(truths)} rows" in printed.out
    df = pd.read_parquet(out)
    assert list(df.columns) == ["data_source", "prompt", "ability", "reward_model", "extra_info"]
    assert [rm["ground_truth"] for rm in df["reward_model"]] == truths
    assert set(df["data_source"]) == {dataset} and set(df["ability"]) == {"math"}
    assert all(rm["style"] == "rule" for rm in df["reward_model"])
    infos = list(df["extra_info"])
    assert set(infos[0]) == {"split", "index", "dataset", "question", "answer", "level", "subject", "source_id"}
    assert all(info["split"] == "test" for info in infos)
    raw = load_table(os.path.join(RAW, fixture))
    if len(raw) > len(truths):  # a skipped row keeps the raw row numbers of the others
        assert "skipped 1 rows" in printed.err
    assert [info["index"] for info in infos] == sorted(info["index"] for info in infos)
    # the stored answer is what the reward accepts
    for truth in truths:
        assert compute_score(dataset, f"so the answer is \\boxed{{{truth}}}", truth)["score"] == 1.0


def test_templates_of_the_papers():
    q = "What is 1+1?"
    boxed = TEMPLATES["boxed"].messages(q)  # 004 App. C.2
    assert boxed == [{"role": "system", "content": "You are a helpful assistant."},
                     {"role": "user", "content": q + "\nPlease reason step by step, and put your final answer within "
                                                     "\\boxed{}."}]
    agrae = TEMPLATES["agrae"].messages(q)  # 001 App. C.2: the instruction is the system prompt
    assert agrae[0]["content"].startswith("Please reason step by step") and agrae[1]["content"] == q
    open_rs = TEMPLATES["open_rs"].messages(q)[0]["content"]  # 003 App. B, 002 App. C.2
    assert "<think> </think> and <answer> </answer> tags" in open_rs and "\\boxed{}" in open_rs
    assert "MUST BE enclosed within <think> and </think>" in TEMPLATES["aapo_7b"].system
    assert "Therefore, the final answer is: $\\boxed{ANSWER}$" in TEMPLATES["aapo_eval"].system
    assert TEMPLATES["plain"].messages(q) == [{"role": "user", "content": q}]


def test_template_choice_and_json_template(tmp_path):
    raw = load_table(os.path.join(RAW, "math500.jsonl"))
    df = to_verl(raw, "math500", template="open_rs")
    assert df["prompt"][0][0]["role"] == "system" and "<answer>" in df["prompt"][0][0]["content"]
    custom = tmp_path / "tpl.json"
    custom.write_text(json.dumps({"system": None, "user": "Q: {question}\nA:"}))
    df = to_verl(raw, "math500", template=str(custom))
    assert list(df["prompt"][0]) == [{"role": "user", "content": "Q: " + raw["problem"][0] + "\nA:"}]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"user": "no slot"}))
    with pytest.raises(ValueError, match="'user' contains '{question}'"):
        to_verl(raw, "math500", template=str(bad))
    with pytest.raises(ValueError, match="--template 'r2' is neither"):
        to_verl(raw, "math500", template="r2")


def test_parquet_csv_inputs_column_overrides_and_limit(tmp_path):
    raw = pd.DataFrame({"prompt_text": ["1+1?", "2+2?", "3+3?"], "target": [2, 4, 6]})
    raw.to_parquet(tmp_path / "raw.parquet")
    raw.to_csv(tmp_path / "raw.csv", index=False)
    for name in ("raw.parquet", "raw.csv"):
        out = tmp_path / f"{name}.out.parquet"
        main(["convert", "--dataset", "deepscaler", "--input", str(tmp_path / name), "--question-column",
              "prompt_text", "--answer-column", "target", "--limit", "2", "--data-source", "toy", "--output", str(out)])
        df = pd.read_parquet(out)
        assert [rm["ground_truth"] for rm in df["reward_model"]] == ["2", "4"] and set(df["data_source"]) == {"toy"}


def test_hub_names_go_through_datasets(monkeypatch, tmp_path):
    """A Hugging Face name is read with datasets.load_dataset(name, config, split=...) at the user's run time."""
    import datasets

    calls = []

    def fake_load_dataset(name, config=None, split=None):
        calls.append((name, config, split))
        return datasets.Dataset.from_list([{"question": "1+1?", "answer": "so 1+1=2\n#### 2"}])

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    main(["convert", "--dataset", "gsm8k", "--output", str(tmp_path / "g.parquet")])
    assert calls == [("openai/gsm8k", "main", "test")]
    assert pd.read_parquet(tmp_path / "g.parquet")["reward_model"][0]["ground_truth"] == "2"


def test_clear_errors(tmp_path):
    with pytest.raises(ValueError, match=r"no question column; looked for \['problem'"):
        to_verl(pd.DataFrame({"q": ["x"], "answer": ["1"]}), "math500")
    with pytest.raises(ValueError, match="no answer column"):
        to_verl(pd.DataFrame({"problem": ["x"], "notes": ["1"]}), "aime24")
    with pytest.raises(ValueError, match="--question-column 'qq' not found"):
        to_verl(pd.DataFrame({"problem": ["x"], "answer": ["1"]}), "math500", question_column="qq")
    with pytest.raises(ValueError, match="--dataset 'math9000' is unknown"):
        to_verl(pd.DataFrame({"problem": ["x"], "answer": ["1"]}), "math9000")
    with pytest.raises(FileNotFoundError, match="'/no/such.jsonl' is neither an existing file"):
        main(["convert", "--dataset", "math", "--input", "/no/such.jsonl", "--output", str(tmp_path / "x.parquet")])
    (tmp_path / "t.txt").write_text("x")
    with pytest.raises(ValueError, match="t.txt: unknown file type"):
        load_table(str(tmp_path / "t.txt"))
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(ValueError, match="broken.json: cannot read"):
        load_table(str(tmp_path / "broken.json"))
    (tmp_path / "empty.jsonl").write_text(json.dumps({"problem": "x", "answer": ""}) + "\n")
    with pytest.raises(ValueError, match="no usable rows"):
        main(["convert", "--dataset", "math500", "--input", str(tmp_path / "empty.jsonl"), "--output",
              str(tmp_path / "e.parquet")])


def test_list_command(capsys):
    main(["list"])
    out = capsys.readouterr().out
    assert all(name in out for name in DATASETS) and all(name in out for name in TEMPLATES)


def test_verl_rl_dataset_reads_the_output(tmp_path):
    """verl's RLHFDataset (what data.train_files feeds) tokenizes the prompts and keeps index / extra_info."""
    from omegaconf import OmegaConf

    from tests.tiny_lm import build_tokenizer
    from verl.utils.dataset.rl_dataset import RLHFDataset

    files = []
    for name in ("math500", "gsm8k"):  # two files with different sources: concatenated by verl
        path = tmp_path / f"{name}.parquet"
        main(["convert", "--dataset", name, "--input", os.path.join(RAW, CASES[name][0]), "--output", str(path)])
        files.append(str(path))
    tok = build_tokenizer(tmp_path / "tok")
    cfg = OmegaConf.create({"prompt_key": "prompt", "max_prompt_length": 1024, "filter_overlong_prompts": True,
                            "cache_dir": str(tmp_path / "cache"), "filter_overlong_prompts_workers": 1})
    ds = RLHFDataset(files, tok, cfg)
    assert len(ds) == len(CASES["math500"][1]) + len(CASES["gsm8k"][1])
    item = ds[5]
    assert item["data_source"] == "gsm8k" and item["reward_model"]["ground_truth"] == "2000"
    assert item["index"] == 1 and item["extra_info"]["question"].startswith("A shop sells")
    assert item["raw_prompt"][-1]["content"].endswith("\\boxed{}.")
