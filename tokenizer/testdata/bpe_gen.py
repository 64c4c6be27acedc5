# Builds a small byte-level BPE vocabulary by training on the head of the TinyStories
# text, then encodes sample texts with the algorithm of GPT-2's encoder.py (bpe():
# repeatedly merge every occurrence of the lowest-ranked pair). Output: gpt2_bpe.json.
import json, random, sys
import regex

PAT = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")

def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~")+1))+list(range(ord("¡"), ord("¬")+1))+list(range(ord("®"), ord("ÿ")+1))
    cs = bs[:]
    n = 0
    for b in range(2**8):
        if b not in bs:
            bs.append(b)
            cs.append(2**8+n)
            n += 1
    return dict(zip(bs, map(chr, cs)))

B2U = bytes_to_unicode()

def words(text):
    return ["".join(B2U[b] for b in w.encode("utf-8")) for w in PAT.findall(text)]

def train(text, n_merges):
    freq = {}
    for w in words(text):
        freq[tuple(w)] = freq.get(tuple(w), 0) + 1
    merges = []
    for _ in range(n_merges):
        pairs = {}
        for w, f in freq.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] = pairs.get((a, b), 0) + f
        if not pairs:
            break
        best = max(sorted(pairs), key=lambda p: pairs[p])
        merges.append(best)
        nf = {}
        for w, f in freq.items():
            out, i = [], 0
            while i < len(w):
                if i < len(w)-1 and (w[i], w[i+1]) == best:
                    out.append(w[i]+w[i+1]); i += 2
                else:
                    out.append(w[i]); i += 1
            nf[tuple(out)] = nf.get(tuple(out), 0) + f
        freq = nf
    return merges

def get_pairs(word):
    return set(zip(word, word[1:]))

def bpe(token, ranks):  # GPT-2 encoder.py
    word = tuple(token)
    pairs = get_pairs(word)
    if not pairs:
        return word
    while True:
        bigram = min(pairs, key=lambda pair: ranks.get(pair, float('inf')))
        if bigram not in ranks:
            break
        first, second = bigram
        new_word = []
        i = 0
        while i < len(word):
            try:
                j = word.index(first, i)
                new_word.extend(word[i:j])
                i = j
            except ValueError:
                new_word.extend(word[i:])
                break
            if word[i] == first and i < len(word)-1 and word[i+1] == second:
                new_word.append(first+second)
                i += 2
            else:
                new_word.append(word[i])
                i += 1
        word = tuple(new_word)
        if len(word) == 1:
            break
        pairs = get_pairs(word)
    return word

text = open(sys.argv[1], encoding="utf-8").read()
merges = train(text[:20000], 400)
ranks = {m: i for i, m in enumerate(merges)}
tokens = [B2U[b] for b in range(256)] + [a+b for a, b in merges] + ["<|endoftext|>"]
ids = {t: i for i, t in enumerate(tokens)}
assert len(ids) == len(tokens)
random.seed(3)
lines = [l for l in text[20000:60000].split("\n") if l.strip()]
samples = random.sample(lines, 30) + [
    "Once upon a time, there was a little girl named Lily.",
    "  two  spaces\n\n\tand tabs ",
    "naïve café ☕ 東京 🎉",
    "Lily's mom said: \"Don't! It's 12:30, we'll go.\"",
    "aaaa bbbb abababab the the the",
]
cases = []
for s in samples:
    out = []
    for w in words(s):
        out.extend(ids[p] for p in bpe(w, ranks))
    cases.append({"text": s, "ids": out})
json.dump({"source": "bpe_gen.py: BPE trained on tinystories-valid-head.txt[:20000], encoded with GPT-2 encoder.py's bpe()",
           "tokens": tokens, "merges": [a+" "+b for a, b in merges], "cases": cases},
          open("gpt2_bpe.json", "w"), ensure_ascii=False)
print(len(tokens), len(merges), len(cases))
