"""Probes: greedy requests whose answers the reference server (pure recompute)
fixes, the prompt words they and the clients are made of, check_probe()
(exact text comparison), and QuietRounds, the thread that checks every probe
alone on an idle server after a prefix-cache reset.

Probe texts are set once by compute_references() in the main thread before
any worker starts; afterwards every thread only reads them."""
import http.client
import random
import threading
import time
import traceback

from soak_http import HTTP_TIMEOUT_S, answer_text, http_call, stream_request
from soak_server import ServerProcess, wait_for_drain


WORDS = ("the whale ship sea captain said it was a truth universally acknowledged that a "
         "single man in possession of a good fortune must be in want of a wife and the lord "
         "spoke unto the people of the land river mountain garden letter morning winter "
         "quiet house window child story light dark road city old new friend water fire "
         "stone bread music north south small great long short").split()


def words(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def long_text(seed, n):
    r = random.Random(seed)
    return words(r, n)


class Probe:
    """A well-formed greedy request whose answer is known from the reference server."""

    def __init__(self, name, endpoint, body):
        self.name, self.endpoint, self.body = name, endpoint, body
        self.text = None
        self.prompt_tokens = None


def make_probes(cfg):
    """Completion probes sharing one long prefix, chat probes sharing a long system prompt."""
    common = {"temperature": 0, "max_tokens": cfg.probe_max_tokens, "ignore_eos": True}
    prefix = long_text(101, 230)
    system = long_text(202, 200)
    probes = []
    for i, tail in enumerate(["and then the captain", "so the child wrote a letter",
                              "in the morning light", "the old friend said", "water and fire"]):
        probes.append(Probe(f"completion-{i}", "/v1/completions",
                            {"prompt": prefix + " " + tail, **common}))
    probes.append(Probe("completion-short", "/v1/completions",
                        {"prompt": "the quiet house by the river", **common}))
    for i, question in enumerate(["tell me about the sea", "who is the captain",
                                  "write a short story about winter"]):
        probes.append(Probe(f"chat-{i}", "/v1/chat/completions",
                            {"messages": [{"role": "system", "content": system},
                                          {"role": "user", "content": question}], **common}))
    probes.append(Probe("chat-short", "/v1/chat/completions",
                        {"messages": [{"role": "user", "content": "hello there"}], **common}))
    return probes


def compute_references(cfg, probes):
    """Pure-recompute answers (no tiers, default KV memory) for every probe."""
    ref = ServerProcess(cfg, "reference")
    try:
        for probe in probes:
            r = http_call(ref.port, "POST", probe.endpoint, probe.body)
            if r.status != 200:
                raise RuntimeError(f"reference server answered {r.status} to probe "
                                   f"{probe.name}: {r.body[:300]!r}")
            doc = r.json()
            probe.text = answer_text(probe.endpoint, doc)
            probe.prompt_tokens = doc["usage"]["prompt_tokens"]
            if probe.prompt_tokens + cfg.probe_max_tokens > cfg.max_model_len:
                raise RuntimeError(f"probe {probe.name} has {probe.prompt_tokens} tokens; "
                                   f"too long for --max-model-len {cfg.max_model_len}")
    finally:
        ref.stop()
    return probes


def check_probe(soak, kind, probe, stream, fail):
    """Sends one probe and compares its text with the reference, exactly.

    fail(reason, detail) is called for a transport or status failure; a
    different text is a wrong output."""
    body = dict(probe.body, stream=stream)
    cached = 0
    try:
        if stream:
            text, _, problem = stream_request(soak, probe.endpoint, body)
            if problem:
                return fail(problem.split(":")[0], problem)
        else:
            r = http_call(soak.port, "POST", probe.endpoint, body)
            if r.status != 200:
                return fail(f"status_{r.status}", r.body[:400])
            doc = r.json()
            text = answer_text(probe.endpoint, doc)
            usage = doc["usage"]
            cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
            if usage["prompt_tokens"] != probe.prompt_tokens:
                fail("prompt_tokens_differ", f"{probe.name}: {usage['prompt_tokens']} vs "
                                             f"reference {probe.prompt_tokens}")
    except (OSError, http.client.HTTPException) as e:
        return fail("connection_error", repr(e))
    mode = "stream" if stream else "plain"
    if text != probe.text:
        soak.stats.wrong(probe, f"{kind} {mode}", text)
        return soak.stats.count(kind, f"{mode} WRONG")
    soak.stats.probe_checked(cached)
    soak.stats.count(kind, f"{mode} {'match_cached' if cached else 'match'}")


class QuietRounds(threading.Thread):
    """Every --quiet-every s: pause the clients, let the engine drain (no request
    may stay behind), POST /reset_prefix_cache (pool and host tier dropped; it
    must succeed on an idle server), then check every probe alone, so its
    prefix comes back from the fs tier (or is recomputed where the injector
    damaged it)."""

    kind = "quiet_probe"

    def __init__(self, soak):
        super().__init__(name="quiet-rounds", daemon=True)
        self.soak, self.stats = soak, soak.stats
        self.rounds = []

    def run(self):
        cfg = self.soak.cfg
        next_round = time.time() + min(cfg.quiet_every, max(5.0, cfg.duration / 3))
        try:
            while not self.soak.stop.wait(0.5):
                if time.time() >= next_round:
                    self.one_round()
                    next_round = time.time() + cfg.quiet_every
        except Exception:
            self.stats.fail("quiet_round", "driver_exception", traceback.format_exc())
        finally:
            self.soak.open_gate()

    def fail(self, reason, detail):
        if not self.soak.stop.is_set() or self.soak.server.is_alive():
            self.stats.fail(self.kind, reason, detail)

    def one_round(self):
        soak = self.soak
        started = time.time()
        try:
            if not soak.close_gate(HTTP_TIMEOUT_S + 10):
                return self.fail("clients_did_not_finish", "a client request outlived "
                                 f"{HTTP_TIMEOUT_S + 10} s")
            if soak.stop.is_set():
                return
            problem = wait_for_drain(soak, 30)
            if problem:
                return self.fail("engine_not_idle", problem)
            if not self.reset():
                return
            before = soak.server.metrics()
            for probe in soak.probes:
                soak.stats.take_request()
                check_probe(soak, self.kind, probe, False, self.fail)
            after = soak.server.metrics()
        finally:
            soak.open_gate()

        def delta(key):
            return after.get(key, 0) - before.get(key, 0)
        self.rounds.append({
            "at_s": round(started - soak.started, 1), "took_s": round(time.time() - started, 1),
            "probes": len(soak.probes),
            "external_tokens": delta(
                'vllm:prompt_tokens_by_source_total{source="external_kv_transfer"}'),
            "fs_hit_tokens": delta('strata:kv_tier_hit_tokens_total{tier="fs"}'),
            "fs_load_failures": delta(
                'vllm:kv_offload_tiering_promotion_job_failures_total{tier="fs"}')})

    def reset(self):
        """POST /reset_prefix_cache on the idle server; a refusal now is a failure."""
        for _ in range(10):
            try:
                r = http_call(self.soak.port, "POST", "/reset_prefix_cache", b"", timeout=30)
            except (OSError, http.client.HTTPException) as e:
                self.fail("reset_connection_error", repr(e))
                return False
            if r.status == 200:
                self.stats.count("reset_prefix_cache", "done_quiet")
                return True
            time.sleep(0.5)
        self.fail("reset_refused_while_idle", f"status {r.status}: {r.body[:300]!r}")
        return False
