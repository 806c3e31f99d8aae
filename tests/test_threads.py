"""Modules, mnnpy.numpy, mnnpy.cv and training called from 8 Python threads at once.

Every result is checked against the reference library and against mnnpy's own result for the
same input computed on one thread before the threads start:
- model outputs against onnxruntime within rtol 1e-3 and an atol of 1e-4 times the output's
  largest magnitude (the model tests' tolerance for float32 sums in another order, scaled: some
  random-weight models give outputs near 1e-9; another input's output is off by its whole
  scale), and bit for bit against the single-threaded run (the same plan splits its work the
  same way whichever threads run it);
- mnnpy.numpy against NumPy within 2e-6 relative (float32 transcendentals, sums of 300 terms
  summed pairwise in another order) and bit for bit against the single-threaded run;
- mnnpy.cv against OpenCV bit for bit (the functions used are exact: GaussianBlur, cvtColor to
  gray and HSV, INTER_LINEAR resize and Sobel on uint8);
- training on separate modules in separate threads bit for bit against the same training run
  on one thread (the same graphs give the same numbers).
Threads start together at a barrier, so first calls (planning, new shapes) race as well.
"""
import os
import threading
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")
from onnx import TensorProto  # noqa: E402
from onnx import helper as oh  # noqa: E402
from onnx import numpy_helper  # noqa: E402

from model_zoo import EXPORT_DIR, export_torchvision  # noqa: E402

import mnnpy  # noqa: E402
import mnnpy.expr as F  # noqa: E402
import mnnpy.nn.functional as nnf  # noqa: E402
from mnnpy import _core, convert, nn, optim  # noqa: E402

THREADS = 8
MODEL_RTOL, MODEL_ATOL = 1e-3, 1e-4  # atol relative to the output's largest magnitude


def assert_model_output(got, expected, what=""):
    assert got.shape == expected.shape, what
    np.testing.assert_allclose(got, expected, rtol=MODEL_RTOL, atol=MODEL_ATOL * float(np.abs(expected).max()),
                               err_msg=what)


def run_threads(work, n=THREADS):
    """Runs work(i) for i in range(n) on n threads released together; re-raises the first failure."""
    barrier = threading.Barrier(n)
    errors = []

    def body(i):
        try:
            barrier.wait()
            work(i)
        except BaseException as e:  # noqa: BLE001  (reported by the main thread)
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


# ------------------------------------------------------------------ models
class TinyEncoder(torch.nn.Module):
    """Attention, layer norm, GELU and matmuls, with a second input that scales the logits (so
    that inputs are bound by name and order)."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True, activation="gelu")
        self.head = torch.nn.Linear(32, 10)

    def forward(self, tokens, scale):
        return self.head(self.layer(tokens).mean(dim=1)) * scale


def export_tiny_encoder():
    path = os.path.join(EXPORT_DIR, "tiny_encoder_op17.onnx")
    if os.path.exists(path):
        return path
    os.makedirs(EXPORT_DIR, exist_ok=True)
    torch.manual_seed(0)
    model = TinyEncoder().eval()
    args = (torch.randn(2, 8, 32), torch.randn(2, 10))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tmp = path + f".{os.getpid()}.tmp"
        torch.onnx.export(model, args, tmp, dynamo=False, opset_version=17, input_names=["tokens", "scale"],
                          output_names=["logits"], dynamic_axes={"tokens": {0: "N"}, "scale": {0: "N"}})
        os.replace(tmp, path)
    return path


class Model:
    """An exported model: how to make its inputs at a batch size, onnxruntime's session, and
    reference outputs (onnxruntime's and mnnpy's on one thread) for a few inputs per batch."""

    def __init__(self, name, path, make_inputs, batches, rng, inputs_per_batch=2):
        self.name, self.path = name, path
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        single = nn.load_module_from_file(path)  # a module of its own: the threads' module plans afresh
        self.cases = {}
        for batch in batches:
            for k in range(inputs_per_batch):
                feed = make_inputs(rng, batch)
                expected = session.run(None, feed)[0]
                ours = single.forward(feed).numpy()
                assert_model_output(ours, expected, f"{name} batch {batch} on one thread")
                self.cases[batch, k] = (feed, expected, ours)

    def check(self, module, batch, k):
        feed, expected, single = self.cases[batch, k]
        got = module.forward(feed).numpy()
        assert_model_output(got, expected, f"{self.name} batch {batch} input {k}")
        np.testing.assert_array_equal(got, single, err_msg=f"{self.name} batch {batch} input {k}")


def image_inputs(size):
    return lambda rng, batch: {"input": rng.standard_normal((batch, 3, size, size)).astype(np.float32)}


def encoder_inputs(rng, batch):
    return {"tokens": rng.standard_normal((batch, 8, 32)).astype(np.float32),
            "scale": rng.uniform(0.5, 2, (batch, 10)).astype(np.float32)}


@pytest.fixture(scope="module")
def models():
    rng = np.random.default_rng(20240611)
    batches = (1, 2, 3)
    return [Model("resnet18", export_torchvision("resnet18", 32), image_inputs(32), batches, rng),
            Model("mobilenet_v3_small", export_torchvision("mobilenet_v3_small", 64), image_inputs(64), batches, rng),
            Model("tiny_encoder", export_tiny_encoder(), encoder_inputs, batches, rng)]


@pytest.mark.parametrize("shapes", ["mixed", "fixed"])
def test_modules_called_from_threads_match_onnxruntime(models, shapes):
    """One module per model shared by 8 threads, 32 calls each over the models, with batches 1-3
    in random order ('mixed': planned concurrently on first use) or all batch 1 ('fixed': one plan
    per model run by every thread at once)."""
    modules = [nn.load_module_from_file(m.path) for m in models]
    calls = 32
    batches = (1, 2, 3) if shapes == "mixed" else (1,)
    done = [0] * THREADS

    def work(i):
        order = np.random.default_rng(i)
        for _ in range(calls):
            m = int(order.integers(len(models)))
            models[m].check(modules[m], int(order.choice(batches)), int(order.integers(2)))
            done[i] += 1

    run_threads(work)
    assert sum(done) == THREADS * calls


def test_plan_cache_cleared_and_evicted_while_modules_run(models):
    """Another thread empties the plan cache and fills it past its size with distinct small
    graphs while modules run: plans in use stay alive with whoever runs them."""
    model = models[1]
    module = nn.load_module_from_file(model.path)
    stop = threading.Event()
    churned = []

    def churn():
        import mnnpy.numpy as mnp
        n = 0
        while not stop.is_set() or n < 600:  # more distinct graphs than the cache keeps (512)
            n += 1
            # Sums of the first `size` odd numbers are exact in float32 in any order while every
            # partial sum is an integer of at most 2^24: size at most 4096.
            size = (n - 1) % 4096 + 1
            v = mnp.arange(size, dtype=np.float32)
            assert float((v * 2.0 + 1.0).sum()) == float(size * size)
            if n % 50 == 0:
                _core.clear_plan_cache()
        churned.append(n)

    churner = threading.Thread(target=churn)
    churner.start()
    try:
        def work(i):
            order = np.random.default_rng(100 + i)
            for _ in range(10):
                model.check(module, int(order.integers(1, 4)), int(order.integers(2)))

        run_threads(work, THREADS - 1)
    finally:
        stop.set()
        churner.join()
    assert churned and churned[0] >= 600


def test_set_num_threads_while_modules_run(models):
    """The pool is resized between 1 and 2 threads while forwards run (results within the model
    tolerance: the split of the work changes with the thread count)."""
    model = models[0]
    module = nn.load_module_from_file(model.path)
    before = mnnpy.get_num_threads()
    stop = threading.Event()

    def toggle():
        k = 0
        while not stop.is_set():
            mnnpy.set_num_threads(1 + k % 2)
            k += 1

    toggler = threading.Thread(target=toggle)
    toggler.start()
    try:
        def work(i):
            order = np.random.default_rng(200 + i)
            for _ in range(6):
                batch, k = int(order.integers(1, 4)), int(order.integers(2))
                feed, expected, _ = model.cases[batch, k]
                assert_model_output(module.forward(feed).numpy(), expected, f"batch {batch} input {k}")

        run_threads(work, THREADS - 1)
    finally:
        stop.set()
        toggler.join()
        mnnpy.set_num_threads(before)
    assert mnnpy.get_num_threads() == before


# ------------------------------------------------------------------ small models, other module paths
def _onnx_model(nodes, inputs, outputs, weights=None):
    types = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64}
    graph = oh.make_graph(nodes, "threads", [oh.make_tensor_value_info(k, types[v.dtype], list(v.shape))
                                             for k, v in inputs.items()],
                          [oh.make_empty_tensor_value_info(o) for o in outputs],
                          initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in (weights or {}).items()])
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 13)])


def test_shape_inputs_and_data_dependent_models_from_threads(rng):
    """Inputs whose values decide shapes (Reshape by an input: one graph per value, the set of
    such inputs found on the first calls, which race) and shapes that depend on the data (NonZero:
    a graph per call)."""
    x = rng.uniform(-3, 3, (2, 6)).astype(np.float32)
    reshape = _onnx_model([oh.make_node("Reshape", ["x", "shape"], ["y"]), oh.make_node("Relu", ["y"], ["z"])],
                          {"x": x, "shape": np.array([3, 4], np.int64)}, ["z"])
    graph, _ = convert.from_onnx(reshape.SerializeToString())
    by_value = nn._ConvertedModule(graph, graph.weights, ["x", "shape"], [])
    nodes = [oh.make_node("Greater", ["x", "zero"], ["mask"]), oh.make_node("NonZero", ["mask"], ["where"]),
             oh.make_node("Transpose", ["where"], ["idx"], perm=[1, 0]), oh.make_node("GatherND", ["x", "idx"], ["g"]),
             oh.make_node("Mul", ["g", "two"], ["y"])]
    nonzero = _onnx_model(nodes, {"x": np.zeros((3, 5), np.float32)}, ["y"],
                          {"zero": np.float32(0), "two": np.float32(2)})
    graph, _ = convert.from_onnx(nonzero.SerializeToString())
    by_data = nn._ConvertedModule(graph, graph.weights, ["x"], [])
    shapes = [[3, 4], [4, 3], [2, 6], [12, 1]]
    data = [rng.uniform(-3, 3, (3, 5)).astype(np.float32) for _ in range(THREADS)]

    def work(i):
        for k in range(6):
            shape = shapes[(i + k) % len(shapes)]
            np.testing.assert_array_equal(by_value.forward(x, np.array(shape, np.int64)).numpy(),
                                          np.maximum(x.reshape(shape), 0))
            v = data[(i + k) % THREADS]
            np.testing.assert_array_equal(by_data.forward(v).numpy(), v[v > 0] * 2)

    run_threads(work)
    assert len(by_value._instances) == len(shapes)
    assert not by_data._instances


def test_expr_module_and_predictor_from_threads(rng):
    """load_module over an expr graph, and a planned Predictor, shared by the threads; their
    inputs are bound per call (the graph also reads a parameter placeholder)."""
    w = rng.standard_normal((16, 4)).astype(np.float32)
    weight = nn.Parameter(w)
    x = F.placeholder([3, 16], dtype=np.float32)
    module = nn.load_module([x], [F.relu(F.matmul(x, weight))])
    predictor = optim.Predictor(lambda v: F.tanh(F.matmul(v, weight)))
    data = [rng.standard_normal((3, 16)).astype(np.float32) for _ in range(THREADS)]
    relu_single = [module.forward(d).numpy() for d in data]
    tanh_single = [predictor(d) for d in data]

    def work(i):
        for k in range(20):
            j = (i + k) % THREADS
            np.testing.assert_array_equal(module.forward(data[j]).numpy(), relu_single[j])
            np.testing.assert_array_equal(predictor(data[j]), tanh_single[j])
            np.testing.assert_allclose(relu_single[j], np.maximum(data[j] @ w, 0), rtol=1e-5, atol=1e-5)

    run_threads(work)


def test_planned_graph_binds_inputs_per_run(rng):
    x = F.placeholder([2, 3], dtype=np.float32)
    x.name = "x"
    y = F.placeholder([3], dtype=np.float32)
    out = x * y * 2.0  # exact in float32
    plan = _core.PlannedGraph([out], [x, y])
    a, b = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    np.testing.assert_array_equal(plan.run([a, b])[0].numpy(), a * b * 2)
    assert not x.is_evaluated  # nothing was written into the placeholders
    with pytest.raises(ValueError, match="takes 2 input values, got 1"):
        plan.run([a])
    with pytest.raises(ValueError, match="placeholder 'x' of shape"):
        plan.run([np.zeros((3, 3), np.float32), b])
    with pytest.raises(ValueError, match="'x' has no value"):
        plan.run()  # the old form reads the placeholders' values
    x.write(a)
    y.write(b)
    np.testing.assert_array_equal(plan.run()[0].numpy(), a * b * 2)
    with pytest.raises(ValueError, match="not a placeholder"):
        _core.PlannedGraph([out], [out])


# ------------------------------------------------------------------ numpy and cv on shared inputs
def test_numpy_on_shared_lazy_vars_from_threads(rng):
    """Threads read the same lazy Vars (each computes them if none has kept a value yet: one value
    is kept and every thread gets it) and build their own expressions on them."""
    import mnnpy.numpy as mnp
    x = rng.standard_normal((256, 300)).astype(np.float32)
    w = rng.uniform(0.5, 2, 300).astype(np.float32)
    expected_rows = (np.tanh(x.astype(np.float64) * w + 1) - np.exp(-np.abs(x.astype(np.float64)))).sum(axis=1)
    for _ in range(4):  # fresh lazy Vars each round: the race is on their first evaluation
        a = mnp.asarray(x)
        shared = mnp.tanh(a * w + 1.0) - mnp.exp(-mnp.abs(a))
        rows = shared.sum(axis=1)
        single = (shared * 3.0).mean(axis=0).numpy()
        got = [None] * THREADS

        def work(i):
            own = (shared * float(i + 1)).mean(axis=0)
            got[i] = (np.asarray(rows), own.numpy())

        run_threads(work)
        assert rows.is_evaluated
        kept = np.asarray(rows)
        for i, (r, own) in enumerate(got):
            assert r.__array_interface__["data"][0] == kept.__array_interface__["data"][0]  # one value kept
            np.testing.assert_allclose(own, (single / 3.0) * (i + 1), rtol=2e-6, atol=1e-6)
        np.testing.assert_array_equal(got[2][1], single)
        np.testing.assert_allclose(kept, expected_rows, rtol=2e-6, atol=1e-4)


def test_random_draws_from_threads_take_distinct_streams():
    """Threads drawing from the global generator get the draws that as many calls on one thread
    get (each its own stream), in some order."""
    import mnnpy.numpy as mnp
    mnp.random.seed(7)
    sequential = sorted(tuple(np.asarray(mnp.random.random(16))) for _ in range(THREADS))
    mnp.random.seed(7)
    got = [None] * THREADS

    def work(i):
        got[i] = tuple(np.asarray(mnp.random.random(16)))

    run_threads(work)
    assert sorted(got) == sequential


def test_cv_on_shared_images_from_threads(rng):
    """A shared NumPy image and a shared lazy Var (a blurred image not computed yet) processed by
    8 threads at once, exactly as OpenCV does on one."""
    cv2 = pytest.importorskip("cv2")
    import mnnpy.cv as mcv
    import mnnpy.numpy as mnp
    image = rng.integers(0, 256, (96, 128, 3), dtype=np.uint8)
    blurred_ref = cv2.GaussianBlur(image, (5, 5), 0)
    gray_ref = cv2.cvtColor(blurred_ref, cv2.COLOR_BGR2GRAY)
    sobel_ref = cv2.Sobel(gray_ref, cv2.CV_16S, 1, 0)
    hsv_ref = cv2.cvtColor(image, cv2.COLOR_BGR2HSV)
    small_ref = [cv2.resize(blurred_ref, (40 + 4 * i, 30 + i)) for i in range(THREADS)]
    for _ in range(3):
        blurred = mcv.GaussianBlur(mnp.asarray(image), (5, 5), 0)  # lazy, shared

        def work(i):
            gray = mcv.cvtColor(blurred, mcv.COLOR_BGR2GRAY)
            np.testing.assert_array_equal(np.asarray(mcv.Sobel(gray, mcv.CV_16S, 1, 0)), sobel_ref)
            np.testing.assert_array_equal(np.asarray(mcv.resize(blurred, (40 + 4 * i, 30 + i))), small_ref[i])
            np.testing.assert_array_equal(np.asarray(mcv.cvtColor(image, mcv.COLOR_BGR2HSV)), hsv_ref)
            np.testing.assert_array_equal(np.asarray(blurred), blurred_ref)

        run_threads(work)


# ------------------------------------------------------------------ training
class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(),
                                      nn.Conv2d(6, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten())
        self.head = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        return self.head(self.features(x))


def _train(model, optimizer, batches, planned):
    """Alternates eager steps (opt.step) and planned ones (opt.compile); returns the losses."""
    step = optimizer.compile(lambda x, y: nnf.cross_entropy(model(x), y), *batches[0]) if planned else None
    losses = []
    for k, (x, y) in enumerate(batches):
        if planned and k % 2:
            losses.append(step(x, y))
        else:
            losses.append(optimizer.step(nnf.cross_entropy(model(F.const(x)), F.const(y))))
    return losses


@pytest.mark.parametrize("planned", [False, True], ids=["step", "step_and_compile"])
def test_training_separate_modules_in_threads_equals_one_thread(planned):
    """Each thread trains its own CNN (same structure, so the threads share plans and kernels);
    parameters, buffers and losses equal those of the same runs made one after another."""
    def setup(i):
        nn.manual_seed(i)
        model = SmallCNN()
        model.train()
        opt = optim.Adam(model, lr=3e-3) if i % 2 else optim.SGD(model, lr=0.05, momentum=0.9)
        data = np.random.default_rng(1000 + i)
        batches = [(data.standard_normal((8, 1, 8, 8)).astype(np.float32), data.integers(0, 10, 8))
                   for _ in range(6)]
        return model, opt, batches

    n = 4
    sequential = [setup(i) for i in range(n)]
    expected_losses = [_train(m, o, b, planned) for m, o, b in sequential]
    threaded = [setup(i) for i in range(n)]
    losses = [None] * n

    def work(i):
        model, opt, batches = threaded[i]
        losses[i] = _train(model, opt, batches, planned)

    run_threads(work, n)
    assert losses == expected_losses
    for (ours, _, _), (ref, _, _) in zip(threaded, sequential):
        for (name, a), (_, b) in zip(ours.state_dict().items(), ref.state_dict().items()):
            np.testing.assert_array_equal(a, b, err_msg=name)


POOL_STRESS = r"""
import sys
import numpy as np
import mnnpy
from mnnpy import _core
import mnnpy.expr as F

threads, runs = int(sys.argv[1]), int(sys.argv[2])
mnnpy.set_num_threads(threads)
rng = np.random.default_rng(int(sys.argv[3]))
# Back-to-back steps of a few chunks each, alternating between two row counts (so that
# consecutive jobs have different chunk counts), so that workers finishing one job race the
# caller starting the next.
x = F.placeholder([48, 64])
w = F.const(rng.standard_normal((64, 64)).astype(np.float32) * 0.1)
w_tall = F.const(rng.standard_normal((16, 16)).astype(np.float32) * 0.1)
y = x
for _ in range(6):
    y = F.relu(F.matmul(y, w))
    y = F.reshape(F.relu(F.matmul(F.reshape(y, [192, 16]), w_tall)), [48, 64])
total = F.reduce_sum(y, [1])
plan = _core.PlannedGraph([y, total], [x])
a = rng.standard_normal((48, 64)).astype(np.float32)
first = [np.array(v) for v in plan.run([a])]
for _ in range(runs):
    for got, want in zip(plan.run([a]), first):
        assert np.array_equal(np.array(got), want), "a run's result differs from the first run's"
print("ok")
"""


@pytest.mark.parametrize("threads", [2, 3, 8])
def test_thread_pool_back_to_back_jobs_finish_with_equal_results(threads):
    """Thousands of short parallel steps at more threads than cores: every job finishes (a worker
    still leaving one job must never claim a chunk of the next, which would leave its caller
    waiting forever) and each run's result equals the first's. In a subprocess with a time limit,
    so that a hang fails the test."""
    import subprocess
    import sys
    from helpers import python_env
    proc = subprocess.run([sys.executable, "-c", POOL_STRESS, str(threads), "3000", str(threads)],
                          capture_output=True, text=True, timeout=240, env=python_env())
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
