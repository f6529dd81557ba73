# report.awk: turns results.tsv (name, outcome, ops, detail) into report.md / report.json
# and checks the ratchet. Variables: oos, md, js, ratchet.
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
    name = $1; oc = $2; ops = $3; det = $4
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
    tot[folder]++; cnt[folder, oc]++; all[oc]++; folders[folder] = 1
    if (why != "") { oosn[folder]++; alloos++ }
    n = split(ops, o, ",")
    for (i = 1; i <= n; i++) { opt[o[i]]++; if (oc == "pass") opp[o[i]]++ }
}
END {
    nout = split("pass wrong unsupported compile_error runtime_error", outs, " ")
    print "# spyrec ONNX conformance report\n" > md
    printf "| folder | total | pass | wrong | unsupported | compile error | runtime error | of which out of scope | pass %% |\n|---|---|---|---|---|---|---|---|---|\n" > md
    for (f in folders) fl[++nf] = f
    asort(fl)
    for (i = 1; i <= nf; i++) {
        f = fl[i]
        printf "| %s | %d | %d | %d | %d | %d | %d | %d | %.1f |\n", f, tot[f], cnt[f,"pass"], cnt[f,"wrong"], cnt[f,"unsupported"], cnt[f,"compile_error"], cnt[f,"runtime_error"], oosn[f], 100.0*cnt[f,"pass"]/tot[f] > md
        printf "%s: %d/%d pass (%.1f%%)\n", f, cnt[f,"pass"], tot[f], 100.0*cnt[f,"pass"]/tot[f]
    }
    printf "| all | %d | %d | %d | %d | %d | %d | %d | %.1f |\n\n", N, all["pass"], all["wrong"], all["unsupported"], all["compile_error"], all["runtime_error"], alloos, 100.0*all["pass"]/N > md
    printf "total: %d/%d pass\n", all["pass"], N
    print "## Per operator (tests using the op: passing / total)\n\n| op | pass | total |\n|---|---|---|" > md
    for (o2 in opt) ol[++no] = o2
    asort(ol)
    for (i = 1; i <= no; i++) printf "| %s | %d | %d |\n", ol[i], opp[ol[i]], opt[ol[i]] > md
    print "\n## Out of scope (counted as failures in every total)\n\n| test | reason |\n|---|---|" > md
    for (i = 1; i <= N; i++) if (whys[i] != "") printf "| %s | %s |\n", names[i], whys[i] > md
    print "\n## Every test\n\n| test | outcome | ops | detail |\n|---|---|---|---|" > md
    for (i = 1; i <= N; i++) {
        d = dets[i]; if (whys[i] != "") d = "out of scope (" whys[i] ") " d
        gsub(/\|/, "/", d)
        printf "| %s | %s | %s | %s |\n", names[i], outc[i], opsl[i], d > md
    }
    printf "{\n  \"total\": %d,\n  \"pass\": %d,\n  \"folders\": {", N, all["pass"] > js
    for (i = 1; i <= nf; i++) {
        f = fl[i]; printf "%s\n    \"%s\": {\"total\": %d", (i > 1 ? "," : ""), f, tot[f] > js
        for (k = 1; k <= nout; k++) printf ", \"%s\": %d", outs[k], cnt[f,outs[k]] > js
        printf ", \"out_of_scope\": %d}", oosn[f] > js
    }
    printf "\n  },\n  \"operators\": {" > js
    for (i = 1; i <= no; i++) printf "%s\n    \"%s\": {\"pass\": %d, \"total\": %d}", (i > 1 ? "," : ""), jesc(ol[i]), opp[ol[i]], opt[ol[i]] > js
    printf "\n  },\n  \"tests\": [" > js
    for (i = 1; i <= N; i++)
        printf "%s\n    {\"name\": \"%s\", \"outcome\": \"%s\", \"ops\": \"%s\", \"out_of_scope\": \"%s\", \"detail\": \"%s\"}", (i > 1 ? "," : ""), jesc(names[i]), outc[i], jesc(opsl[i]), jesc(whys[i]), jesc(dets[i]) > js
    print "\n  ]\n}" > js
    bad = 0
    if (("node" in minpass) && cnt["node","pass"] < minpass["node"]) { printf "conformance: node passes %d < ratchet %d\n", cnt["node","pass"], minpass["node"]; bad = 1 }
    if (("total" in minpass) && all["pass"] < minpass["total"]) { printf "conformance: total passes %d < ratchet %d\n", all["pass"], minpass["total"]; bad = 1 }
    exit bad
}
