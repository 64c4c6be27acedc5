import regex, random, json
pats = {
 "gpt2": r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
 "llama3": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
 "qwen2": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
}
pool = list("aZé東Жß") + list("07½٣") + [" "]*6 + list("\t\n\r\n") + ["'"]*4 + list("sStTrReEvVmMlLdD") + list(".,!?-$\"") + ["🦙", "\u00a0", "\u3000", "\u2028", "\u200d", "\ufe0f", "\u0301"]
random.seed(7)
cases = []
for i in range(400):
    n = random.randint(1, 14)
    s = "".join(random.choice(pool) for _ in range(n))
    cases.append({"text": s, **{k: regex.findall(p, s) for k, p in pats.items()}})
for s in ["\x1c", "a\x1cb", "\x85x", "I'M", "x'Ll 'S"]:
    cases.append({"text": s, **{k: regex.findall(p, s) for k, p in pats.items()}})
for c in cases:
    for k in pats: assert "".join(c[k]) == c["text"], (k, c)
json.dump({"source": "Python regex module %s, patterns of GPT-2 encoder.py and llama.cpp (llama-bpe, qwen2)" % regex.__version__, "patterns": pats, "cases": cases}, open("pretok.json","w"), ensure_ascii=False, indent=0)
print(len(cases))
