"""mnnpy.llm's encoder embeddings (mnnpy/llm/_encoder.py) against transformers: small BERT,
RoBERTa and XLM-RoBERTa configs with random weights (seeded), written with save_pretrained
(safetensors), a WordPiece tokenizer built here, no downloads; the last hidden states and the
pooled, normalized embeddings in float32 against transformers' own float32 forward; bad
checkpoints, configs and inputs."""
import json
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from mnnpy.llm._encoder import POOLING_MODES, EncoderConfig, TextEncoder  # noqa: E402
from mnnpy.llm._safetensors import load_checkpoint  # noqa: E402

VOCAB = 120
MAX_POSITIONS = 40
SIZES = dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=96,
             max_position_embeddings=MAX_POSITIONS, layer_norm_eps=1e-12)

# family -> (config class, model class, where the encoder sits in the model); the task model
# (BertForMaskedLM) writes its tensors under "bert.", the bare models without a prefix.
FAMILIES = {
    "bert": ("BertConfig", "BertModel", None, {}),
    "bert_masked_lm": ("BertConfig", "BertForMaskedLM", "bert", {}),
    # A large eps, so that reading it (not BERT's default 1e-12) shows in the values.
    "bert_gelu_tanh": ("BertConfig", "BertModel", None, dict(hidden_act="gelu_new", type_vocab_size=3,
                                                             layer_norm_eps=1e-3)),
    "roberta": ("RobertaConfig", "RobertaModel", None, dict(pad_token_id=1, type_vocab_size=1)),
    "xlm-roberta": ("XLMRobertaConfig", "XLMRobertaModel", None, dict(pad_token_id=1, type_vocab_size=1)),
}


def make_checkpoint(folder, family, seed):
    """A random checkpoint of `family` in `folder`; returns transformers' encoder of it."""
    config_name, model_name, encoder_name, extra = FAMILIES[family]
    config = getattr(transformers, config_name)(**{**SIZES, **extra})
    torch.manual_seed(seed)
    model = getattr(transformers, model_name)(config).eval()
    with torch.no_grad():  # weights larger than the default init's, so attention is far from uniform
        for name, p in model.named_parameters():
            p.normal_(0, 0.2)
            if "LayerNorm.weight" in name:
                p.add_(1.0)
    model.save_pretrained(folder, safe_serialization=True)
    return getattr(model, encoder_name) if encoder_name else model


def reference_hidden(model, ids):
    with torch.no_grad():
        return model(torch.tensor(np.asarray([ids], np.int64))).last_hidden_state[0].numpy()


def reference_embedding(hidden, modes, normalize=True):
    """sentence-transformers' Pooling of one unpadded sequence, modes concatenated in its order,
    then torch's F.normalize."""
    h = torch.from_numpy(hidden)
    length = h.shape[0]
    parts = {"cls": h[0], "lasttoken": h[-1], "max": h.max(0).values, "mean": h.sum(0) / length,
             "mean_sqrt_len_tokens": h.sum(0) / np.sqrt(length),
             "weightedmean": (h * torch.arange(1, length + 1, dtype=torch.float32)[:, None]).sum(0)
             / (length * (length + 1) / 2)}
    out = torch.cat([parts[m] for m in POOLING_MODES if m in modes])
    return (torch.nn.functional.normalize(out, dim=0) if normalize else out).numpy()


def check_close(got, expected):
    """float32 against float32 computed in another order. Each value is a sum of 64-96 products
    per projection, through LayerNorms of O(1) outputs; reordered float32 sums differ by about
    sqrt(n) * 6e-8 relative a step, which observed end to end is ~1e-6 of the largest value.
    Allowing 2e-5 of the largest value (plus rtol 1e-4) leaves a margin of 10x or more, while
    a wrong eps, bias, position or activation moves values by 1e-3 of the scale or more."""
    assert got.shape == expected.shape and got.dtype == np.float32
    scale = float(np.abs(expected).max())
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=2e-5 * scale)


def write_pooling(folder, **flags):
    os.makedirs(os.path.join(folder, "1_Pooling"), exist_ok=True)
    config = {"word_embedding_dimension": SIZES["hidden_size"], **{f"pooling_mode_{k}": v for k, v in flags.items()}}
    with open(os.path.join(folder, "1_Pooling", "config.json"), "w") as f:
        json.dump(config, f)


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    """One BERT checkpoint shared by the tests that vary only the pooling or the inputs."""
    folder = str(tmp_path_factory.mktemp("bert"))
    return folder, make_checkpoint(folder, "bert", seed=7)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_hidden_states_and_cls_embedding_match_transformers(tmp_path, rng, family):
    folder = str(tmp_path / family)
    reference = make_checkpoint(folder, family, seed=int(rng.integers(1 << 30)))
    encoder = TextEncoder(folder)
    assert encoder.pooling == ("cls",) and encoder.normalize and encoder.dim == SIZES["hidden_size"]
    for length in (1, 6, 23, encoder.config.max_tokens):
        ids = rng.integers(0, VOCAB, length)
        expected = reference_hidden(reference, ids)
        check_close(encoder.last_hidden_state(ids), expected)
        embedding = encoder.embed(ids)
        check_close(embedding, reference_embedding(expected, ("cls",)))
        assert abs(float(np.linalg.norm(embedding)) - 1.0) < 1e-6


def test_roberta_positions_skip_padding_tokens(tmp_path, rng):
    """RoBERTa numbers positions from pad_token_id + 1 and gives padding tokens pad_token_id's
    position (transformers' create_position_ids_from_input_ids); padding ids inside the one
    sequence are still attended to, as transformers does without an attention mask."""
    folder = str(tmp_path / "roberta")
    reference = make_checkpoint(folder, "roberta", seed=3)
    encoder = TextEncoder(folder)
    ids = rng.integers(2, VOCAB, 9)
    ids[[2, 5]] = 1  # pad_token_id
    check_close(encoder.last_hidden_state(ids), reference_hidden(reference, ids))


@pytest.mark.parametrize("flags, modes", [
    (dict(mean_tokens=True), ("mean",)),
    (dict(cls_token=True, mean_tokens=False), ("cls",)),
    (dict(lasttoken=True, mean_tokens=False), ("lasttoken",)),
    (dict(cls_token=True, max_tokens=True, mean_tokens=True, mean_sqrt_len_tokens=True, weightedmean_tokens=True,
          lasttoken=True), POOLING_MODES),
    ({}, ("mean",)),  # flags left out take sentence-transformers' defaults: mean on
])
def test_pooling_config_of_sentence_transformers(tmp_path, rng, bert, flags, modes):
    source, reference = bert
    folder = str(tmp_path / "st")
    os.makedirs(folder)
    for name in ("config.json", "model.safetensors"):
        os.symlink(os.path.join(source, name), os.path.join(folder, name))
    write_pooling(folder, **flags)
    encoder = TextEncoder(folder)
    assert encoder.pooling == modes and encoder.dim == SIZES["hidden_size"] * len(modes)
    for length in (1, 11):
        ids = rng.integers(0, VOCAB, length)
        check_close(encoder.embed(ids), reference_embedding(reference_hidden(reference, ids), modes))


def test_pooling_argument_and_normalize_off(rng, bert):
    folder, reference = bert
    tensors = load_checkpoint(folder)
    with open(os.path.join(folder, "config.json")) as f:
        hf_config = json.load(f)
    ids = rng.integers(0, VOCAB, 13)
    hidden = reference_hidden(reference, ids)
    for pooling in ("mean", ["max", "cls"], "weightedmean"):
        encoder = TextEncoder(folder, tensors, hf_config, pooling=pooling, normalize=False)
        modes = (pooling,) if isinstance(pooling, str) else tuple(pooling)
        check_close(encoder.embed(ids), reference_embedding(hidden, modes, normalize=False))
    # The "pooling_mode" string of sentence-transformers' config overrides its flags.
    folder_mode = os.path.join(os.path.dirname(folder), "by_name")
    os.makedirs(os.path.join(folder_mode, "1_Pooling"), exist_ok=True)
    with open(os.path.join(folder_mode, "1_Pooling", "config.json"), "w") as f:
        json.dump({"pooling_mode": "lasttoken", "pooling_mode_mean_tokens": True}, f)
    assert TextEncoder(folder_mode, tensors, hf_config).pooling == ("lasttoken",)


def test_plans_reused_per_length_and_bounded(rng, bert):
    folder, reference = bert
    encoder = TextEncoder(folder, max_plans=2)
    ids = rng.integers(0, VOCAB, 8)
    first = encoder.embed(ids)
    plan = encoder._plans[8]
    np.testing.assert_array_equal(encoder.embed(ids), first)  # the same plan, run again
    other = rng.integers(0, VOCAB, 8)  # new values through the same plan
    check_close(encoder.embed(other), reference_embedding(reference_hidden(reference, other), ("cls",)))
    assert encoder._plans[8] is plan
    for length in (3, 5):
        encoder.embed(rng.integers(0, VOCAB, length))
    assert list(encoder._plans) == [3, 5]  # the least recently used length dropped
    np.testing.assert_array_equal(encoder.embed(ids), first)  # planned again, the same values


def test_calls_from_threads(rng, bert):
    folder, reference = bert
    encoder = TextEncoder(folder, max_plans=2)
    inputs = [rng.integers(0, VOCAB, length) for length in (4, 9, 4, 17, 9, 30, 4, 12)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(encoder.embed, inputs))
    for ids, got in zip(inputs, results):
        check_close(got, reference_embedding(reference_hidden(reference, ids), ("cls",)))


def make_wordpiece_tokenizer():
    """A BERT-style WordPiece tokenizer (lowercasing, [CLS] ... [SEP]) over a small vocabulary."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    words = ["the", "quick", "brown", "fox", "jump", "##s", "over", "lazy", "dog", "hello", "world", "embed",
             "##ding", "text", ",", "."]
    vocab = {token: i for i, token in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words)}
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.BertProcessing(("[SEP]", vocab["[SEP]"]), ("[CLS]", vocab["[CLS]"]))
    tokenizer.decoder = decoders.WordPiece()
    return tokenizer, vocab


def test_text_embedding_with_special_tokens(tmp_path, rng, bert):
    source, reference = bert
    folder = str(tmp_path / "with_tokenizer")
    os.makedirs(folder)
    for name in ("config.json", "model.safetensors"):
        os.symlink(os.path.join(source, name), os.path.join(folder, name))
    tokenizer, vocab = make_wordpiece_tokenizer()
    tokenizer.save(os.path.join(folder, "tokenizer.json"))
    encoder = TextEncoder(folder)
    text = "The quick brown fox jumps over the lazy dog, embedding text."
    ids = encoder.encode_text(text)
    expected_ids = transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer)(text)["input_ids"]
    assert ids == expected_ids and ids[0] == vocab["[CLS]"] and ids[-1] == vocab["[SEP]"] and len(ids) > 10
    assert vocab["[UNK]"] in encoder.encode_text("zebra")  # out of the vocabulary
    expected = reference_embedding(reference_hidden(reference, ids), ("cls",))
    check_close(encoder.embed_text(text), expected)
    check_close(encoder.embed(ids), expected)
    with pytest.raises(TypeError, match="str"):
        encoder.encode_text(ids)


def test_create_embedding_model_like_mnn(tmp_path, bert):
    """MNN.llm's route: create(path, embedding_model=True) (or an encoder's folder) -> load() ->
    txt_embedding(text), the text tokenized with its special tokens."""
    import mnnpy.llm as llm
    source, reference = bert
    folder = str(tmp_path / "embedding")
    os.makedirs(folder)
    for name in ("config.json", "model.safetensors"):
        os.symlink(os.path.join(source, name), os.path.join(folder, name))
    tokenizer, _ = make_wordpiece_tokenizer()
    tokenizer.save(os.path.join(folder, "tokenizer.json"))
    model = llm.create(os.path.join(folder, "config.json"), embedding_model=True)
    assert isinstance(model, llm.Embedding) and isinstance(llm.create(folder), llm.Embedding)
    with pytest.raises(RuntimeError, match="call load"):
        model.txt_embedding("hello")
    assert model.load()
    text = "hello world, the lazy dog"
    ids = model.tokenizer_encode(text)
    expected = reference_embedding(reference_hidden(reference, ids), ("cls",))
    check_close(model.txt_embedding(text), expected)
    check_close(model.ids_embedding(ids), expected)
    assert model.tokenizer_decode(ids).startswith("[CLS]")


def test_bad_inputs_raise_clear_errors(rng, bert):
    folder, _ = bert
    encoder = TextEncoder(folder)
    with pytest.raises(ValueError, match="non-empty 1-D"):
        encoder.embed([])
    with pytest.raises(ValueError, match="non-empty 1-D"):
        encoder.embed([[1, 2]])
    with pytest.raises(ValueError, match="integers"):
        encoder.embed([1.0, 2.0])
    with pytest.raises(ValueError, match=r"\[0, 120\)"):
        encoder.embed([3, VOCAB])
    with pytest.raises(ValueError, match=r"\[0, 120\)"):
        encoder.embed([-1, 3])
    with pytest.raises(ValueError, match="max_position_embeddings 40"):
        encoder.embed(np.zeros(MAX_POSITIONS + 1, np.int64))
    with pytest.raises(RuntimeError, match="no tokenizer.json"):
        encoder.encode_text("hello")
    with pytest.raises(ValueError, match="pooling must be"):
        TextEncoder(folder, pooling="first")


def test_roberta_length_limit_counts_the_position_offset(tmp_path):
    folder = str(tmp_path / "roberta")
    make_checkpoint(folder, "roberta", seed=5)
    encoder = TextEncoder(folder)
    assert encoder.config.max_tokens == MAX_POSITIONS - 2
    encoder.embed(np.full(MAX_POSITIONS - 2, 5))
    with pytest.raises(ValueError, match="limit of 38.*starting at 2"):
        encoder.embed(np.full(MAX_POSITIONS - 1, 5))


def test_bad_configs_and_checkpoints_raise_clear_errors(tmp_path, bert):
    folder, _ = bert
    tensors = load_checkpoint(folder)
    with open(os.path.join(folder, "config.json")) as f:
        hf = json.load(f)
    with pytest.raises(ValueError, match="model_type 'llama' is not supported"):
        EncoderConfig({**hf, "model_type": "llama"})
    with pytest.raises(ValueError, match="needs 'intermediate_size'"):
        EncoderConfig({k: v for k, v in hf.items() if k != "intermediate_size"})
    with pytest.raises(ValueError, match="multiple of num_attention_heads"):
        EncoderConfig({**hf, "num_attention_heads": 5})
    with pytest.raises(ValueError, match="hidden_act 'swiglu'"):
        EncoderConfig({**hf, "hidden_act": "swiglu"})
    with pytest.raises(ValueError, match="position_embedding_type 'relative_key'"):
        EncoderConfig({**hf, "position_embedding_type": "relative_key"})
    with pytest.raises(ValueError, match="needs 'pad_token_id'"):
        EncoderConfig({**{k: v for k, v in hf.items() if k != "pad_token_id"}, "model_type": "roberta"})
    missing = "encoder.layer.1.attention.self.key.bias"
    with pytest.raises(ValueError, match=f"no tensor '{missing}'"):
        TextEncoder(folder, {k: v for k, v in tensors.items() if k != missing}, hf)
    wrong = "encoder.layer.0.intermediate.dense.weight"
    with pytest.raises(ValueError, match=rf"{wrong} has shape \[64, 96\], the config says \[96, 64\]"):
        TextEncoder(folder, {**tensors, wrong: tensors[wrong].T}, hf)
    with pytest.raises(ValueError, match="position_embeddings.weight has shape"):
        TextEncoder(folder, tensors, {**hf, "max_position_embeddings": 64})
    with pytest.raises(ValueError, match="not a BERT-family encoder"):
        TextEncoder(folder, {"model.embed_tokens.weight": tensors["embeddings.word_embeddings.weight"]}, hf)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="no config.json"):
        TextEncoder(str(empty))
    (empty / "config.json").write_text(json.dumps(hf))
    with pytest.raises(FileNotFoundError, match="no .safetensors"):
        TextEncoder(str(empty))
    os.makedirs(empty / "1_Pooling")
    (empty / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_mean_tokens": False}))
    with pytest.raises(ValueError, match="no pooling mode is on"):
        TextEncoder(str(empty), tensors, hf)
