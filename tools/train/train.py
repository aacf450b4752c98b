#!/usr/bin/python3
"""Train strata-tiny on CPU under a wall-clock budget.

BF16 autocast, AdamW (0.9, 0.95, weight decay 0.1 on matrices), linear warm-up then cosine decay to 10%
of the peak learning rate over the *time* budget (so the run ends on time whatever CPU share it gets),
gradient clipping 1.0, random windows of seq_len+1 tokens from the packed training stream, fixed seeds.
Writes WORK/ckpt/last.pt every --ckpt_every seconds and at the end, and WORK/ckpt/log.jsonl.
Resume after a crash with --resume (continues the schedule at the saved elapsed time).

Usage: nice -n 19 /usr/bin/python3 train.py --work WORK --minutes 60
"""
import argparse
import json
import math
import os
import random
import time

import numpy as np
import torch
import torch.nn.functional as F

from model import Config, LlamaForCausalLM


def lr_at(frac, warm_frac, peak, final_ratio):
    if frac < warm_frac:
        return peak * max(frac / warm_frac, 0.01)
    p = min(1.0, (frac - warm_frac) / max(1e-9, 1.0 - warm_frac))
    return peak * (final_ratio + (1 - final_ratio) * 0.5 * (1 + math.cos(math.pi * p)))


@torch.no_grad()
def evaluate(model, val, seq_len, max_windows, bf16):
    model.eval()
    n = (len(val) - 1) // seq_len
    n = min(n, max_windows)
    tot, cnt = 0.0, 0
    for i in range(0, n, 8):
        rows = range(i, min(n, i + 8))
        x = torch.stack([torch.from_numpy(val[j * seq_len:(j + 1) * seq_len].astype(np.int64)) for j in rows])
        y = torch.stack([torch.from_numpy(val[j * seq_len + 1:(j + 1) * seq_len + 1].astype(np.int64)) for j in rows])
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(x)
        loss = F.cross_entropy(logits.float().view(-1, logits.size(-1)), y.view(-1), reduction="sum")
        tot += loss.item()
        cnt += y.numel()
    model.train()
    return tot / cnt, cnt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--seq_len", type=int, default=512)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--final_lr_ratio", type=float, default=0.1)
    ap.add_argument("--warmup_frac", type=float, default=0.02)
    ap.add_argument("--weight_decay", type=float, default=0.1)
    ap.add_argument("--ckpt_every", type=float, default=600.0, help="seconds")
    ap.add_argument("--eval_every", type=float, default=300.0, help="seconds")
    ap.add_argument("--eval_windows", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--max_steps", type=int, default=0, help="stop after this many steps (0: time budget only)")
    ap.add_argument("--no_bf16", action="store_true")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv_heads", type=int, default=2)
    ap.add_argument("--ffn", type=int, default=704)
    ap.add_argument("--max_pos", type=int, default=512)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    bf16 = not args.no_bf16

    data_dir = os.path.join(args.work, "data")
    train = np.fromfile(os.path.join(data_dir, "train.bin"), dtype=np.uint16)
    val = np.fromfile(os.path.join(data_dir, "val.bin"), dtype=np.uint16)
    ck_dir = os.path.join(args.work, "ckpt")
    os.makedirs(ck_dir, exist_ok=True)
    ck_path = os.path.join(ck_dir, "last.pt")
    log_path = os.path.join(ck_dir, "log.jsonl")

    cfg = Config(hidden_size=args.hidden, num_hidden_layers=args.layers, num_attention_heads=args.heads,
                 num_key_value_heads=args.kv_heads, intermediate_size=args.ffn, max_position_embeddings=args.max_pos)
    assert args.seq_len <= cfg.max_position_embeddings
    model = LlamaForCausalLM(cfg)
    nparams = sum(p.numel() for p in model.parameters())
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    gen = np.random.default_rng(args.seed)
    step, elapsed0, tokens = 0, 0.0, 0
    if args.resume and os.path.exists(ck_path):
        ck = torch.load(ck_path)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        step, elapsed0, tokens = ck["step"], ck["elapsed"], ck["tokens"]
        gen = np.random.default_rng(args.seed + step)
        torch.manual_seed(args.seed + step)
        print("resumed at step %d, %.0f s, %d tokens" % (step, elapsed0, tokens))
        with open(log_path, "a") as f:
            f.write(json.dumps({"event": "resume", "args": vars(args), "step": step, "elapsed": elapsed0,
                                "tokens": tokens}) + "\n")
    else:
        with open(log_path, "w") as f:
            f.write(json.dumps({"event": "start", "args": vars(args), "config": cfg.to_dict(), "params": nparams,
                                "train_tokens": int(train.size), "val_tokens": int(val.size)}) + "\n")
    print("params %d (%.2f M); train stream %d tokens; val %d tokens" % (nparams, nparams / 1e6, train.size, val.size))

    budget = args.minutes * 60.0
    T = args.seq_len
    t_start = time.time() - elapsed0
    last_ck = time.time()
    last_eval = time.time()
    last_print = time.time()
    tok_since, t_since = 0, time.time()

    def save(final=False):
        elapsed = time.time() - t_start
        ck = {"model": model.state_dict(), "opt": opt.state_dict(), "step": step, "elapsed": elapsed,
              "tokens": tokens, "config": cfg.to_dict(), "args": vars(args)}
        torch.save(ck, ck_path + ".tmp")
        os.replace(ck_path + ".tmp", ck_path)
        if final:
            torch.save({"model": model.state_dict(), "config": cfg.to_dict(), "step": step, "elapsed": elapsed,
                        "tokens": tokens, "args": vars(args)}, os.path.join(ck_dir, "final.pt"))

    def log(d):
        with open(log_path, "a") as f:
            f.write(json.dumps(d) + "\n")

    model.train()
    while True:
        elapsed = time.time() - t_start
        frac = elapsed / budget
        if frac >= 1.0 or (args.max_steps and step >= args.max_steps):
            break
        lr = lr_at(frac, args.warmup_frac, args.lr, args.final_lr_ratio)
        for g in opt.param_groups:
            g["lr"] = lr
        starts = gen.integers(0, train.size - T - 1, size=args.batch)
        batch = torch.from_numpy(np.stack([train[s:s + T + 1] for s in starts]).astype(np.int64))
        x, y = batch[:, :-1], batch[:, 1:]
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(x)
        loss = F.cross_entropy(logits.float().view(-1, logits.size(-1)), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        tokens += x.numel()
        tok_since += x.numel()
        now = time.time()
        if now - last_print >= 30 or step <= 3:
            tps = tok_since / max(1e-9, now - t_since)
            print("step %5d  %6.0fs  loss %.4f  lr %.2e  gnorm %.2f  %.0f tok/s  %.2fM tok" %
                  (step, now - t_start, loss.item(), lr, gnorm.item(), tps, tokens / 1e6), flush=True)
            log({"event": "train", "step": step, "elapsed": now - t_start, "loss": loss.item(), "lr": lr,
                 "gnorm": gnorm.item(), "tok_per_s": tps, "tokens": tokens})
            last_print, tok_since, t_since = now, 0, now
        if now - last_eval >= args.eval_every:
            vl, n = evaluate(model, val, T, args.eval_windows, bf16)
            print("eval step %d  val loss %.4f  ppl %.2f  (%d tokens)" % (step, vl, math.exp(vl), n), flush=True)
            log({"event": "eval", "step": step, "elapsed": time.time() - t_start, "val_loss": vl, "tokens": tokens})
            last_eval = time.time()
        if now - last_ck >= args.ckpt_every:
            save()
            last_ck = time.time()
            print("checkpoint saved at step %d" % step, flush=True)

    save(final=True)
    vl, n = evaluate(model, val, T, 10 ** 9, bf16)
    elapsed = time.time() - t_start
    print("done: %d steps, %d tokens, %.0f s; val loss %.4f ppl %.2f (%d tokens, in-memory model, bf16 autocast)"
          % (step, tokens, elapsed, vl, math.exp(vl), n), flush=True)
    log({"event": "done", "step": step, "elapsed": elapsed, "tokens": tokens, "val_loss": vl, "val_tokens": n})


if __name__ == "__main__":
    main()
