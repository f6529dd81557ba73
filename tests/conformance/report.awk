# report.awk: turns results.tsv (name, outcome, ops, detail, computes, fp16 outcome, fp16
# detail, flagless) into report.md / report.json and checks the ratchet. Variables: oos,
# md, js, ratchet.
# "pass with no flags" counts the passes compiled once with no --bind, --input-shape or
# --input-seq (flagless = "yes"); the other passes were specialised on each data set.
# A pass whose bundle never reads its inputs (computes = "no": every output was folded to
# a constant when compiling) is a pass, and is also counted in its own column.
# The fp16 mode column counts the cases that use float16 (fp16 outcome not empty) and
# their passes when compiled with --precision=fp16; it is apart from every other count.
function jesc(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); return s }
BEGIN {
    while ((getline line < oos) > 0) {
        if (line ~ /^#/ || line == "") continue
        if (line ~ /^~/) {                  # ~REGEX~reason: matched against the detail
            split(substr(line, 2), parts, "~"); nre++; rex[nre] = parts[1]; rexwhy[nre] = parts[2]
            continue
        }
        op = line; sub(/ .*/, "", op); r = line; sub(/^[^ ]+ /, "", r)
        if (op ~ /::\*$/) { sub(/\*$/, "", op); nprefix++; pre[nprefix] = op; prewhy[nprefix] = r }
        else reason[op] = r
    }
    while ((getline line < ratchet) > 0) {
        if (line ~ /^#/ || line == "") continue
        split(line, rf, " "); minpass[rf[1]] = rf[2]
    }
}
{
    name = $1; oc = $2; ops = $3; det = $4; nocomp = (oc == "pass" && $5 == "no")
    nof = (oc == "pass" && $8 == "yes")
    split(name, p, "/"); folder = p[1]
    why = ""
    if (oc != "pass") {
        n = split(ops, o, ",")
        for (i = 1; i <= n && why == ""; i++) {
            if (o[i] in reason) why = o[i] ": " reason[o[i]]
            for (k = 1; k <= nprefix && why == ""; k++)
                if (index(o[i], pre[k]) == 1) why = o[i] ": " prewhy[k]
        }
        for (k = 1; k <= nre && why == ""; k++) if (det ~ rex[k]) why = rexwhy[k]
    }
    N++; names[N] = name; outc[N] = oc; opsl[N] = ops; dets[N] = det; whys[N] = why
    nocs[N] = nocomp; nocn[folder] += nocomp; allnoc += nocomp
    noff[N] = nof; nofn[folder] += nof; allnof += nof
    f16o[N] = $6; f16d[N] = $7
    if ($6 != "") { f16t[folder]++; allf16t++; if ($6 == "pass") { f16p[folder]++; allf16p++ } }
    tot[folder]++; cnt[folder, oc]++; all[oc]++; folders[folder] = 1
    if (why != "") { oosn[folder]++; alloos++ }
    n = split(ops, o, ",")
    for (i = 1; i <= n; i++) { opt[o[i]]++; if (oc == "pass") opp[o[i]]++ }
}
END {
    nout = split("pass wrong unsupported compile_error runtime_error no_data", outs, " ")
    print "# spyrec ONNX conformance report\n" > md
    print "\"pass with no flags\" counts the passes compiled once with no `--bind`, `--input-shape` or `--input-seq`; the other passes were specialised on each data set's values or shapes. \"pass, no computation\" counts the passes whose bundle never reads its inputs: every output was folded to a constant when compiling, so the run checked the folding only. \"no data\" is a case without a test_data_set (nothing checked: a failure). \"fp16 mode\" counts the cases that use float16 (a float16 input or output) and how many of them pass when compiled again with --precision=fp16, checked with the bundle's fp16 metrics; it is in no other column.\n" > md
    printf "| folder | total | pass | of which pass with no flags | of which pass, no computation | wrong | unsupported | compile error | runtime error | no data | of which out of scope | pass %% | fp16 mode: pass / total |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n" > md
    for (f in folders) fl[++nf] = f
    asort(fl)
    for (i = 1; i <= nf; i++) {
        f = fl[i]
        printf "| %s | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %.1f | %d / %d |\n", f, tot[f], cnt[f,"pass"], nofn[f], nocn[f], cnt[f,"wrong"], cnt[f,"unsupported"], cnt[f,"compile_error"], cnt[f,"runtime_error"], cnt[f,"no_data"], oosn[f], 100.0*cnt[f,"pass"]/tot[f], f16p[f], f16t[f] > md
        printf "%s: %d/%d pass (%.1f%%), of which %d with no flags (%.1f%%), %d with no computation; fp16 mode %d/%d pass\n", f, cnt[f,"pass"], tot[f], 100.0*cnt[f,"pass"]/tot[f], nofn[f], 100.0*nofn[f]/tot[f], nocn[f], f16p[f], f16t[f]
    }
    printf "| all | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %.1f | %d / %d |\n\n", N, all["pass"], allnof, allnoc, all["wrong"], all["unsupported"], all["compile_error"], all["runtime_error"], all["no_data"], alloos, 100.0*all["pass"]/N, allf16p, allf16t > md
    printf "total: %d/%d pass, of which %d with no flags, %d with no computation; fp16 mode %d/%d pass\n", all["pass"], N, allnof, allnoc, allf16p, allf16t
    print "## Per operator (tests using the op: passing / total)\n\n| op | pass | total |\n|---|---|---|" > md
    for (o2 in opt) ol[++no] = o2
    asort(ol)
    for (i = 1; i <= no; i++) printf "| %s | %d | %d |\n", ol[i], opp[ol[i]], opt[ol[i]] > md
    print "\n## Out of scope (counted as failures in every total)\n\n| test | reason |\n|---|---|" > md
    for (i = 1; i <= N; i++) if (whys[i] != "") printf "| %s | %s |\n", names[i], whys[i] > md
    print "\n## fp16 mode (the cases that use float16, compiled with --precision=fp16)\n\n| test | fp16 outcome | detail |\n|---|---|---|" > md
    for (i = 1; i <= N; i++) if (f16o[i] != "") {
        d = f16d[i]; gsub(/\|/, "/", d)
        printf "| %s | %s | %s |\n", names[i], f16o[i], d > md
    }
    print "\n## Every test\n\n| test | outcome | ops | detail |\n|---|---|---|---|" > md
    for (i = 1; i <= N; i++) {
        d = dets[i]; if (whys[i] != "") d = "out of scope (" whys[i] ") " d
        if (nocs[i]) d = "no computation (outputs folded to constants) " d
        if (outc[i] == "pass" && !noff[i]) d = "needs flags " d
        gsub(/\|/, "/", d)
        printf "| %s | %s | %s | %s |\n", names[i], outc[i], opsl[i], d > md
    }
    printf "{\n  \"total\": %d,\n  \"pass\": %d,\n  \"pass_no_flags\": %d,\n  \"pass_no_computation\": %d,\n  \"fp16\": {\"pass\": %d, \"total\": %d},\n  \"folders\": {", N, all["pass"], allnof, allnoc, allf16p, allf16t > js
    for (i = 1; i <= nf; i++) {
        f = fl[i]; printf "%s\n    \"%s\": {\"total\": %d", (i > 1 ? "," : ""), f, tot[f] > js
        for (k = 1; k <= nout; k++) printf ", \"%s\": %d", outs[k], cnt[f,outs[k]] > js
        printf ", \"pass_no_flags\": %d, \"pass_no_computation\": %d, \"out_of_scope\": %d, \"fp16\": {\"pass\": %d, \"total\": %d}}", nofn[f], nocn[f], oosn[f], f16p[f], f16t[f] > js
    }
    printf "\n  },\n  \"operators\": {" > js
    for (i = 1; i <= no; i++) printf "%s\n    \"%s\": {\"pass\": %d, \"total\": %d}", (i > 1 ? "," : ""), jesc(ol[i]), opp[ol[i]], opt[ol[i]] > js
    printf "\n  },\n  \"tests\": [" > js
    for (i = 1; i <= N; i++)
        printf "%s\n    {\"name\": \"%s\", \"outcome\": \"%s\", \"no_flags\": %s, \"no_computation\": %s, \"ops\": \"%s\", \"out_of_scope\": \"%s\", \"detail\": \"%s\"%s}", (i > 1 ? "," : ""), jesc(names[i]), outc[i], (noff[i] ? "true" : "false"), (nocs[i] ? "true" : "false"), jesc(opsl[i]), jesc(whys[i]), jesc(dets[i]), (f16o[i] == "" ? "" : ", \"fp16_outcome\": \"" f16o[i] "\", \"fp16_detail\": \"" jesc(f16d[i]) "\"") > js
    print "\n  ]\n}" > js
    bad = ratchet_check("node", cnt["node","pass"]) + ratchet_check("total", all["pass"]) + ratchet_check("fp16", allf16p) + ratchet_check("node_noflags", nofn["node"])
    exit bad > 0
}
# ratchet_check(WHAT, N): 1 (with a message) when N falls below WHAT's ratchet; a note
# when it rises above it.
function ratchet_check(what, n) {
    if (!(what in minpass)) return 0
    if (n < minpass[what]) { printf "conformance: %s passes %d < ratchet %d\n", what, n, minpass[what]; return 1 }
    if (n > minpass[what]) printf "conformance: %s passes %d > ratchet %d: raise it in tests/conformance/ratchet.txt\n", what, n, minpass[what]
    return 0
}
