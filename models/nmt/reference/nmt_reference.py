#!/usr/bin/env python3
"""An independent PyTorch implementation of RNNSearch and Cseq2seq-I, to tell
whether a gap between them in `nmt`'s table is the model or cellc.

It shares no code with `nmt`: PyTorch's own GRU (cuDNN on a GPU; its reset
gate scales the recurrent product, r * (U h + b), as cells/torch_gru.cell,
where cells/gru.cell has U (r * h)), word-level vocabularies (words seen
twice or more: `nmt --tokenizer space --min-count 2` has the same ones),
its own batching, greedy decoder and BLEU. So its numbers compare with each
other and with `nmt`'s on those vocabularies, not with the table's (BPE,
beam 5). The settings follow the width-256 recipe where they can: emb =
hidden = attention = readout = 256, uniform +-0.08 init (`--init paper`),
Adam 1e-3 (no decay), gradient-norm clip 5, dropout 0.2 before the output
layer. Batches: pairs sorted once by target length and cut at about
--max-tokens target tokens (nmt sorts by source length within shuffled
windows and counts the longer side), the batches' order shuffled each
epoch.

Usage: nmt_reference.py --data DIR --arch {rnnsearch,cseq2seq-1}
           [--context last|mean] [--source-eos] [--one-bias]
           [--epochs N] [--minutes M] [--seed S]
DIR holds train/val.lc.norm.tok.{en,de} (the Multi30k recipe's files). Each
epoch prints one line: train loss, validation perplexity and greedy BLEU.
"""

import argparse
import collections
import math
import random
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

PAD, UNK, BOS, EOS = 0, 1, 2, 3


def readLines(path):
    with open(path, encoding="utf-8") as f:
        return [line.split() for line in f]


class Vocab:
    def __init__(self, sentences, minCount=2):
        counts = collections.Counter(w for s in sentences for w in s)
        self.words = ["<pad>", "<unk>", "<s>", "</s>"] + sorted(
            w for w, c in counts.items() if c >= minCount)
        self.index = {w: i for i, w in enumerate(self.words)}

    def encode(self, words):
        return [self.index.get(w, UNK) for w in words]


def batches(pairs, maxTokens, shuffle, rng):
    """Pairs sorted by target length and cut into batches of about
    maxTokens target tokens (a longer pair is a batch of its own)."""
    order = sorted(range(len(pairs)), key=lambda i: (len(pairs[i][1]), len(pairs[i][0])))
    out, cur, longest = [], [], 0
    for i in order:
        longest2 = max(longest, len(pairs[i][1]) + 1)
        if cur and longest2 * (len(cur) + 1) > maxTokens:
            out.append(cur)
            cur, longest2 = [], len(pairs[i][1]) + 1
        cur.append(i)
        longest = longest2
    if cur:
        out.append(cur)
    if shuffle:
        rng.shuffle(out)
    return out


def pad(seqs, device):
    n = max(len(s) for s in seqs)
    t = torch.full((len(seqs), n), PAD, dtype=torch.long)
    for i, s in enumerate(seqs):
        t[i, :len(s)] = torch.tensor(s, dtype=torch.long)
    return t.to(device), torch.tensor([len(s) for s in seqs], device=device)


class Model(nn.Module):
    def __init__(self, srcSize, tgtSize, width, arch, context, dropout, squash):
        super().__init__()
        self.arch, self.context, self.squash = arch, context, squash
        self.srcEmb = nn.Embedding(srcSize, width)
        self.tgtEmb = nn.Embedding(tgtSize, width)
        self.encoder = nn.GRU(width, width, batch_first=True, bidirectional=True)
        self.init = nn.Linear(2 * width, width)
        self.cell1 = nn.GRUCell(width, width)
        self.cell2 = nn.GRUCell(2 * width if arch == "rnnsearch" else width, width)
        if arch == "rnnsearch":
            # e_ji = v . tanh(Wa s~_j + Ua h_i)
            self.wa = nn.Linear(width, width, bias=False)
            self.ua = nn.Linear(2 * width, width)
            self.va = nn.Linear(width, 1, bias=False)
            ctxWidth = 2 * width
        else:
            # Cseq2seq-I (Eq. 7): a GRU re-reads h_1..h_n from tanh(V s~_j + b0)
            self.v = nn.Linear(width, width)
            self.reader = nn.GRU(2 * width, width, batch_first=True)
            ctxWidth = width
        self.readout = nn.Linear(width + ctxWidth + width, width)
        self.drop = nn.Dropout(dropout)
        self.out = nn.Linear(width, tgtSize)
        for p in self.parameters():
            nn.init.uniform_(p, -0.08, 0.08)

    def useOneBias(self):
        """One bias per gate, as cellc's GRU cells: PyTorch's recurrent
        biases (b_hh) held at zero, so b_ih alone moves."""
        for name, p in self.named_parameters():
            if "bias_hh" in name:
                nn.init.zeros_(p)
                p.requires_grad_(False)

    def encode(self, src, srcLen):
        packed = nn.utils.rnn.pack_padded_sequence(
            self.srcEmb(src), srcLen.cpu(), batch_first=True, enforce_sorted=False)
        h, _ = self.encoder(packed)
        h, _ = nn.utils.rnn.pad_packed_sequence(h, batch_first=True, total_length=src.size(1))
        if self.squash:  # nmt: tanh of the annotations, read by all
            h = torch.tanh(h)
        mask = (torch.arange(src.size(1), device=src.device)[None, :] < srcLen[:, None])
        mean = (h * mask[..., None]).sum(1) / srcLen[:, None]
        keys = self.ua(h) if self.arch == "rnnsearch" else None
        return h, mask, keys, torch.tanh(self.init(mean))

    def contextOf(self, query, h, mask, keys, srcLen):
        if self.arch == "rnnsearch":
            e = self.va(torch.tanh(self.wa(query)[:, None, :] + keys)).squeeze(2)
            a = torch.softmax(e.masked_fill(~mask, -1e9), dim=1)
            return torch.bmm(a[:, None, :], h).squeeze(1)
        h0 = torch.tanh(self.v(query))[None]
        outs, _ = self.reader(h, h0)
        if self.context == "mean":
            c = (outs * mask[..., None]).sum(1) / srcLen[:, None]
        else:
            c = outs[torch.arange(outs.size(0)), srcLen - 1]
        return torch.tanh(c) if self.squash else c  # nmt --between-layers tanh

    def step(self, prevWord, s, h, mask, keys, srcLen):
        y = self.tgtEmb(prevWord)
        sTilde = self.cell1(y, s)
        c = self.contextOf(sTilde, h, mask, keys, srcLen)
        s = self.cell2(c, sTilde)
        readS = torch.tanh(s) if self.squash else s
        t = torch.tanh(self.readout(torch.cat([readS, c, y], 1)))
        return self.out(self.drop(t)), s

    def loss(self, src, srcLen, tgt):
        """Summed cross-entropy and token count; tgt has BOS first, EOS last."""
        h, mask, keys, s = self.encode(src, srcLen)
        total, tokens = 0.0, 0
        for j in range(tgt.size(1) - 1):
            logits, s = self.step(tgt[:, j], s, h, mask, keys, srcLen)
            gold = tgt[:, j + 1]
            total = total + F.cross_entropy(logits, gold, ignore_index=PAD, reduction="sum")
            tokens += int((gold != PAD).sum())
        return total, tokens

    @torch.no_grad()
    def greedy(self, src, srcLen, maxLen):
        h, mask, keys, s = self.encode(src, srcLen)
        word = torch.full((src.size(0),), BOS, dtype=torch.long, device=src.device)
        out = []
        for _ in range(maxLen):
            logits, s = self.step(word, s, h, mask, keys, srcLen)
            word = logits.argmax(1)
            out.append(word)
        return torch.stack(out, 1).tolist()


def bleu(hyps, refs):
    """Corpus BLEU-4 (no smoothing), as `nmt score --tokenize none`."""
    match, total = [0] * 4, [0] * 4
    hypLen = refLen = 0
    for hyp, ref in zip(hyps, refs):
        hypLen, refLen = hypLen + len(hyp), refLen + len(ref)
        for n in range(4):
            h = collections.Counter(tuple(hyp[i:i + n + 1]) for i in range(len(hyp) - n))
            r = collections.Counter(tuple(ref[i:i + n + 1]) for i in range(len(ref) - n))
            match[n] += sum(min(c, r[g]) for g, c in h.items())
            total[n] += max(len(hyp) - n, 0)
    if min(match) == 0:
        return 0.0
    logPrec = sum(math.log(m / t) for m, t in zip(match, total)) / 4
    bp = min(0.0, 1 - refLen / max(hypLen, 1))
    return 100 * math.exp(logPrec + bp)


def evaluate(model, pairs, vocabTgt, refs, device, maxTokens):
    model.eval()
    total, tokens, hyps = 0.0, 0, [None] * len(pairs)
    for batch in batches(pairs, maxTokens, False, None):
        src, srcLen = pad([pairs[i][0] for i in batch], device)
        tgt, _ = pad([[BOS] + pairs[i][1] + [EOS] for i in batch], device)
        with torch.no_grad():
            l, n = model.loss(src, srcLen, tgt)
        total, tokens = total + float(l), tokens + n
        for i, words in zip(batch, model.greedy(src, srcLen, int(srcLen.max()) * 2 + 10)):
            words = words[:words.index(EOS)] if EOS in words else words
            hyps[i] = [vocabTgt.words[w] for w in words]
    model.train()
    return math.exp(total / tokens), bleu(hyps, refs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--arch", choices=["rnnsearch", "cseq2seq-1"], required=True)
    ap.add_argument("--context", choices=["last", "mean"], default="last")
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--squash", action="store_true",
                    help="nmt's wiring: tanh of the annotations, of Cseq2seq-I's context and of the state the readout reads")
    ap.add_argument("--source-eos", action="store_true",
                    help="end every source with </s>, as nmt (and dl4mt) do")
    ap.add_argument("--one-bias", action="store_true",
                    help="one bias per GRU gate, as cellc's cells (b_hh held at zero)")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--minutes", type=float, default=0, help="stop after the epoch that passes this")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-tokens", type=int, default=2000)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--limit", type=int, default=0, help="use the first N training pairs (a smoke test)")
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    d = args.data
    trainSrc, trainTgt = readLines(f"{d}/train.lc.norm.tok.en"), readLines(f"{d}/train.lc.norm.tok.de")
    if args.limit:
        trainSrc, trainTgt = trainSrc[:args.limit], trainTgt[:args.limit]
    validSrc, validTgt = readLines(f"{d}/val.lc.norm.tok.en"), readLines(f"{d}/val.lc.norm.tok.de")
    vs, vt = Vocab(trainSrc), Vocab(trainTgt)
    eos = [EOS] if args.source_eos else []
    train = [(vs.encode(s) + eos, vt.encode(t)) for s, t in zip(trainSrc, trainTgt) if s and t]
    # An empty line has nothing to encode or translate: left out, as in
    # training.
    validPairs = [(s, t) for s, t in zip(validSrc, validTgt) if s and t]
    valid = [(vs.encode(s) + eos, vt.encode(t)) for s, t in validPairs]
    validTgt = [t for _, t in validPairs]
    model = Model(len(vs.words), len(vt.words), args.width, args.arch, args.context, 0.2,
                  args.squash).to(args.device)
    if args.one_bias:
        model.useOneBias()
    params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    print(f"{args.arch} context {args.context} seed {args.seed} squash {args.squash} "
          f"source-eos {args.source_eos} one-bias {args.one_bias}: {params} parameters, "
          f"vocab {len(vs.words)}/{len(vt.words)}, {len(train)} pairs, {args.device}", flush=True)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    start = time.time()
    for epoch in range(1, args.epochs + 1):
        lossSum, tokSum = 0.0, 0
        for batch in batches(train, args.max_tokens, True, rng):
            src, srcLen = pad([train[i][0] for i in batch], args.device)
            tgt, _ = pad([[BOS] + train[i][1] + [EOS] for i in batch], args.device)
            l, n = model.loss(src, srcLen, tgt)
            opt.zero_grad()
            (l / n).backward()
            nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
            lossSum, tokSum = lossSum + float(l.detach()), tokSum + n
        ppl, b = evaluate(model, valid, vt, validTgt, args.device, args.max_tokens)
        print(f"epoch {epoch} train loss {lossSum / tokSum:.4f} valid ppl {ppl:.3f} "
              f"valid BLEU {b:.2f} ({time.time() - start:.0f} s)", flush=True)
        if args.minutes and time.time() - start > 60 * args.minutes:
            break


if __name__ == "__main__":
    sys.exit(main())
