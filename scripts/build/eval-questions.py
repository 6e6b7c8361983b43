#!/usr/bin/env python3
"""Writes ts/eval/questions.json, q36-eval's 92 embedded questions, written for this project:
25 science and 25 multi-domain multiple choice, 25 exact-integer math problems (their answers
computed here, not typed), 17 C functions whose flawed line is asked for (0 = safe). The
interleaving (science, multi-domain, math, …, then security) follows the QuarkStar README.
Run from the repository root: python3 scripts/build/eval-questions.py
"""
import json, math
from itertools import product
from math import comb, factorial, gcd

def mc(q, choices, ans, why): return dict(question=q, choices=choices, answer=ans, rationale=why)

science = [
 mc("An electron in a hydrogen atom drops from n = 3 to n = 2. What is the ratio of the emitted photon's wavelength to that of the n = 2 to n = 1 photon?", ["5.4", "0.185", "2.25", "4.0"], "A", "E(3→2)/E(2→1) = (1/4 − 1/9)/(1 − 1/4) = 5/27, so the wavelength ratio is 27/5."),
 mc("A monatomic ideal gas expands reversibly and adiabatically to twice its volume. What is the ratio of its final to its initial absolute temperature?", ["0.50", "0.63", "0.79", "1.26"], "B", "T V^(γ−1) is constant with γ = 5/3, so T2/T1 = 2^(−2/3) ≈ 0.63."),
 mc("Which of these molecules has a nonzero permanent electric dipole moment?", ["CO2", "BF3", "CCl4", "NH3"], "D", "NH3 is trigonal pyramidal; the others are symmetric and their bond dipoles cancel."),
 mc("For an enzyme obeying Michaelis–Menten kinetics, what fraction of Vmax is reached when the substrate concentration equals 3 Km?", ["0.25", "0.50", "0.75", "0.90"], "C", "v/Vmax = [S]/(Km + [S]) = 3/4."),
 mc("A spin-1/2 particle is found with spin +ħ/2 along z and is then measured along x. What is the probability of +ħ/2 along x?", ["0", "1/4", "1/2", "1"], "C", "|⟨+x|+z⟩|² = 1/2."),
 mc("A first-order reaction has a half-life of 10 minutes. What fraction of the reactant remains after 30 minutes?", ["1/3", "1/6", "1/8", "1/9"], "C", "Three half-lives: (1/2)³."),
 mc("How many stereoisomers does 2,3-dibromobutane have?", ["2", "3", "4", "6"], "B", "Two stereocentres with identical substituents: the (R,R)/(S,S) pair and one meso form."),
 mc("For a particle in a one-dimensional infinite square well, what is E3/E1?", ["3", "6", "9", "27"], "C", "E_n ∝ n²."),
 mc("Double-stranded DNA from an organism contains 30% adenine. What percentage of its bases are guanine?", ["20%", "30%", "40%", "70%"], "A", "A = T = 30%, so G + C = 40% and G = 20%."),
 mc("What is the hybridization of sulfur in SF6?", ["sp3", "sp3d", "sp3d2", "dsp2"], "C", "Six electron domains, octahedral."),
 mc("What is the energy of a 500 nm photon, approximately?", ["1.24 eV", "2.48 eV", "3.10 eV", "4.96 eV"], "B", "E = hc/λ ≈ 1240 eV·nm / 500 nm."),
 mc("Which quantity is conserved in an elastic collision but not in a perfectly inelastic one?", ["linear momentum", "total energy", "kinetic energy", "mass"], "C", "Momentum and total energy are conserved in both; kinetic energy only in the elastic case."),
 mc("If a black hole's mass doubles, what happens to its Schwarzschild radius and to the mean density inside that radius?", ["radius doubles, density doubles", "radius doubles, density falls to a quarter", "radius quadruples, density halves", "radius unchanged, density doubles"], "B", "R ∝ M, so density ∝ M/R³ ∝ 1/M²."),
 mc("What is the pH of 0.001 M hydrochloric acid at 25 °C?", ["1", "2", "3", "11"], "C", "A strong acid: [H+] = 10⁻³ M."),
 mc("Where does the citric acid cycle take place in eukaryotic cells?", ["cytosol", "mitochondrial matrix", "inner mitochondrial membrane", "endoplasmic reticulum"], "B", "Its enzymes (except succinate dehydrogenase, bound to the inner membrane) are in the matrix."),
 mc("What is the ground-state term symbol of the oxygen atom?", ["1S0", "3P0", "3P2", "1D2"], "C", "2p⁴: S = 1, L = 1, and J = L + S for a shell more than half full."),
 mc("What is the zero-point energy of a quantum harmonic oscillator of angular frequency ω?", ["0", "ħω/2", "ħω", "3ħω/2"], "B", "E_n = ħω(n + 1/2)."),
 mc("In a population at Hardy–Weinberg equilibrium the recessive allele has frequency 0.2. What is the frequency of heterozygotes?", ["0.04", "0.16", "0.32", "0.64"], "C", "2pq = 2 × 0.8 × 0.2."),
 mc("Which reagent oxidizes a primary alcohol to an aldehyde without further oxidation to the carboxylic acid?", ["hot acidic KMnO4", "PCC in dichloromethane", "NaBH4", "excess K2Cr2O7/H2SO4 at reflux"], "B", "PCC is anhydrous and stops at the aldehyde; NaBH4 is a reductant."),
 mc("What is the Lorentz factor of a particle moving at 0.6c?", ["1.25", "1.60", "0.80", "1.67"], "A", "γ = 1/√(1 − 0.36) = 1/0.8."),
 mc("How many unpaired electrons does a high-spin octahedral Fe(III) complex have?", ["1", "3", "4", "5"], "D", "d⁵ high spin: one electron in each of the five d orbitals."),
 mc("What is the molar heat capacity at constant volume of a rigid diatomic ideal gas near room temperature?", ["3R/2", "5R/2", "7R/2", "3R"], "B", "Three translational and two rotational degrees of freedom; vibration is frozen out."),
 mc("How many codons of the standard genetic code specify amino acids?", ["20", "60", "61", "64"], "C", "64 codons minus the 3 stop codons."),
 mc("What is the magnetic field at the centre of a circular loop of radius R carrying current I?", ["μ0 I/(2πR)", "μ0 I/(2R)", "μ0 I/(4R)", "μ0 I R/2"], "B", "Biot–Savart over the loop: B = μ0 I/(2R)."),
 mc("Which species is aromatic?", ["cyclobutadiene", "tub-shaped cyclooctatetraene", "cyclopentadienyl anion", "cyclopentadienyl cation"], "C", "Planar, cyclic, fully conjugated with 6 π electrons (4n + 2)."),
]

multi = [
 mc("The price elasticity of demand for a good is −2. If its price rises by 5%, by about how much does the quantity demanded change?", ["−2.5%", "−5%", "−10%", "+10%"], "C", "%ΔQ ≈ elasticity × %ΔP."),
 mc("In United States law, the exclusionary rule for evidence from an unconstitutional search derives primarily from which amendment?", ["First", "Fourth", "Fifth", "Sixth", "Tenth"], "B", "It enforces the Fourth Amendment's protection against unreasonable searches."),
 mc("What is the time complexity of building a binary heap from n unordered elements with the bottom-up method?", ["O(log n)", "O(n)", "O(n log n)", "O(n²)"], "B", "The sift-down costs sum to a geometric series bounded by O(n)."),
 mc("What is the interval from C up to the next G?", ["major third", "perfect fourth", "perfect fifth", "major sixth"], "C", "Seven semitones."),
 mc("Which strait separates Asia from North America?", ["Strait of Malacca", "Bering Strait", "Strait of Hormuz", "Bosporus"], "B", "It lies between Chukotka and Alaska."),
 mc("About what fraction of a normal distribution lies within two standard deviations of its mean?", ["68%", "90%", "95%", "99.7%"], "C", "The 68–95–99.7 rule."),
 mc("A deficiency of which vitamin causes scurvy?", ["vitamin A", "vitamin B12", "vitamin C", "vitamin D"], "C", "Ascorbic acid is needed for collagen synthesis."),
 mc("To which language family does Hungarian belong?", ["Indo-European", "Uralic", "Turkic", "Sino-Tibetan"], "B", "Hungarian is a Finno-Ugric language of the Uralic family."),
 mc("In double-entry bookkeeping, how is an increase in an asset account recorded?", ["as a debit", "as a credit", "either, by local convention", "it is not recorded"], "A", "Assets increase on the debit side."),
 mc("What is the equivalent resistance of three 6 Ω resistors in parallel?", ["2 Ω", "3 Ω", "6 Ω", "18 Ω"], "A", "1/R = 3/6."),
 mc("The Peace of Westphalia (1648) ended which war?", ["the Hundred Years' War", "the Thirty Years' War", "the War of the Spanish Succession", "the Seven Years' War"], "B", "It ended the Thirty Years' War (and the Eighty Years' War)."),
 mc("A simply supported beam of span L carries a point load P at midspan. What is the maximum bending moment?", ["PL/2", "PL/4", "PL/8", "PL²/8"], "B", "Each support reacts P/2; the moment at midspan is (P/2)(L/2)."),
 mc("Who formulated the categorical imperative?", ["David Hume", "Immanuel Kant", "John Stuart Mill", "G. W. F. Hegel"], "B", "Kant, Groundwork of the Metaphysics of Morals."),
 mc("Which transport and port does DNS use for ordinary queries?", ["TCP port 80", "UDP port 53", "TCP port 443", "UDP port 123"], "B", "UDP 53 (TCP 53 for large responses and zone transfers)."),
 mc("Compared with the Sun, how long does a 10-solar-mass star stay on the main sequence?", ["about ten times longer", "about as long", "several hundred times shorter", "exactly ten times shorter"], "C", "L ∝ M^3.5 gives t ∝ M/L ∝ M^−2.5 ≈ 1/300."),
 mc("What is the present value of $1,000 received in two years at 10% annual compounding?", ["$800.00", "$826.45", "$833.33", "$909.09"], "B", "1000/1.1²."),
 mc("Which trophic level usually holds the least total biomass in a terrestrial ecosystem?", ["producers", "primary consumers", "secondary consumers", "tertiary consumers"], "D", "Biomass shrinks at each step up the pyramid."),
 mc("How many edges does the complete graph K6 have?", ["12", "15", "30", "36"], "B", "C(6, 2)."),
 mc("Which nutrient do rhizobia fix from the atmosphere for legumes?", ["phosphorus", "potassium", "nitrogen", "sulfur"], "C", "They reduce N2 to ammonia in root nodules."),
 mc("Who painted The Garden of Earthly Delights?", ["Pieter Bruegel the Elder", "Hieronymus Bosch", "Jan van Eyck", "Albrecht Dürer"], "B", "Bosch's triptych in the Prado."),
 mc("Which page-replacement algorithm can show Belady's anomaly (more frames, more faults)?", ["LRU", "FIFO", "optimal (OPT)", "none of these"], "B", "FIFO is not a stack algorithm."),
 mc("Which crystal structure has an atomic packing fraction of about 0.74?", ["simple cubic", "body-centred cubic", "face-centred cubic", "diamond cubic"], "C", "FCC (like HCP) is close packed: π/(3√2)."),
 mc("Who led the Stanford prison experiment?", ["Stanley Milgram", "Philip Zimbardo", "Solomon Asch", "Albert Bandura"], "B", "Zimbardo, 1971."),
 mc("What does copyright protect?", ["ideas", "the expression of ideas", "facts", "methods of operation"], "B", "The idea–expression distinction."),
 mc("What is the Nyquist rate of a signal band-limited to 4 kHz?", ["2 kHz", "4 kHz", "8 kHz", "16 kHz"], "C", "Twice the highest frequency."),
]

def lattice(r2):
    n = 0; r = int(math.isqrt(r2))
    for x in range(-r, r+1):
        for y in range(-r, r+1):
            if x*x + y*y <= r2: n += 1
    return n
def zeros(n):
    z = 0; p = 5
    while p <= n: z += n // p; p *= 5
    return z
def ndiv(n): return sum(1 for d in range(1, n+1) if n % d == 0)
def fib(n):
    a, b = 0, 1
    for _ in range(n): a, b = b, a+b
    return a

math_q = [
 ("How many positive divisors does 2^4 · 3^3 · 5 have?", ndiv(2**4*3**3*5), "(4+1)(3+1)(1+1)."),
 ("What is the sum of all positive integers n ≤ 100 for which n² + n is divisible by 6?", sum(n for n in range(1,101) if (n*n+n) % 6 == 0), "n(n+1) is always even; it must also be divisible by 3, i.e. n ≡ 0 or 2 (mod 3)."),
 ("What is the remainder when 2^100 is divided by 13?", pow(2,100,13), "2^12 ≡ 1 (mod 13), so 2^100 ≡ 2^4."),
 ("How many ordered pairs (a, b) of positive integers satisfy a · b = 360?", ndiv(360), "One pair per divisor of 360 = 2^3 · 3^2 · 5."),
 ("How many points (x, y) with integer coordinates satisfy x² + y² ≤ 25?", lattice(25), "Count per x from −5 to 5: 1 + 2⌊√(25 − x²)⌋."),
 ("What is the sum of the digits of N², where N is the integer written with fifty 9s?", sum(int(c) for c in str((10**50-1)**2)), "N² = 99…9800…01 with 49 nines, an 8, 49 zeros and a 1."),
 ("How many four-digit positive integers have digits that strictly increase from left to right?", comb(9,4), "Choose 4 distinct digits from 1–9 (0 cannot lead an increasing string)."),
 ("What is the smallest positive integer n such that n! ends in exactly 25 zeros?", min(n for n in range(1,200) if zeros(n) == 25), "100! ends in 24 zeros and 105! in 25."),
 ("What is the sum of all integers k with 1 ≤ k ≤ 1000 that are relatively prime to 1000?", sum(k for k in range(1,1001) if gcd(k,1000)==1), "They pair up as k and 1000 − k: φ(1000) · 500."),
 ("In how many ways can a 2 × 10 rectangle be tiled with 1 × 2 dominoes?", fib(11), "The counts follow the Fibonacci recurrence t(n) = t(n−1) + t(n−2)."),
 ("What is 1³ + 2³ + … + 20³?", sum(k**3 for k in range(1,21)), "The sum of the first n cubes is (n(n+1)/2)²."),
 ("How many subsets of {1, 2, …, 10}, the empty set included, contain no two consecutive integers?", sum(1 for m in range(1<<10) if m & (m>>1) == 0), "Fibonacci again: F(12)."),
 ("What are the last three digits of 7^2024? Give them as an integer.", pow(7,2024,1000), "7^20 ≡ 1 (mod 1000), so 7^2024 ≡ 7^4 = 2401."),
 ("How many positive integers less than 1000 are divisible by 3 or by 5 but not by 15?", sum(1 for n in range(1,1000) if (n%3==0 or n%5==0) and n%15 != 0), "333 + 199 − 2 · 66."),
 ("What is the area of a triangle with sides 13, 14 and 15?", 84, "Heron: s = 21, √(21 · 8 · 7 · 6)."),
 ("How many diagonals does a convex 20-gon have?", 20*17//2, "n(n − 3)/2."),
 ("What is the largest prime factor of 2^16 − 1?", 257, "2^16 − 1 = 3 · 5 · 17 · 257."),
 ("How many solutions in positive integers does x + y + z = 15 have?", comb(14,2), "Stars and bars: C(14, 2)."),
 ("How many zeros does 2025! end with?", zeros(2025), "405 + 81 + 16 + 3."),
 ("What is the remainder when 1! + 2! + … + 100! is divided by 12?", sum(factorial(k) for k in range(1,101)) % 12, "k! ≡ 0 (mod 12) for k ≥ 4, leaving 1 + 2 + 6."),
 ("How many positive integers n ≤ 500 are perfect squares or perfect cubes?", sum(1 for n in range(1,501) if round(n**0.5)**2 == n or round(n**(1/3))**3 == n), "22 squares + 7 cubes − 2 sixth powers."),
 ("In how many ways can 8 non-attacking rooks be placed on an 8 × 8 chessboard?", factorial(8), "One rook per row and per column: a permutation."),
 ("The interior angles of a convex polygon add up to 2340°. How many sides does it have?", 2340//180 + 2, "(n − 2) · 180° = 2340°."),
 ("How many integers from 1 to 2025 inclusive contain the digit 7 in their decimal representation?", sum(1 for n in range(1,2026) if '7' in str(n)), "Count the complement (numbers without a 7) digit by digit."),
 ("What is the remainder when 3^27 is divided by 100?", pow(3,27,100), "3 has order 20 modulo 100, so 3^27 ≡ 3^7 = 2187."),
]
assert math_q[12][1] == 401 and math_q[24][1] == 87, (math_q[12][1], math_q[24][1])

# security: (lines, answer line (0 = safe), accepted extra lines, rationale)
sec = [
 (["#include <string.h>", "void copy_name(char *dst, const char *src) {", "    char buf[16];", "    strcpy(buf, src);", "    memcpy(dst, buf, sizeof buf);", "}"], 4, [], "strcpy copies an unbounded string into a 16-byte stack buffer."),
 (["#include <stddef.h>", "int sum(const int *a, size_t n) {", "    int s = 0;", "    for (size_t i = 0; i <= n; i++)", "        s += a[i];", "    return s;", "}"], 4, [5], "The loop condition i <= n reads one element past the end."),
 (["#include <stdlib.h>", "#include <string.h>", "char *dup(const char *s) {", "    size_t n = strlen(s);", "    char *p = malloc(n + 1);", "    if (!p) return NULL;", "    memcpy(p, s, n + 1);", "    return p;", "}"], 0, [], "Safe: the copy is exactly the n + 1 bytes allocated (string and terminator), and allocation failure is handled."),
 (["#include <stdio.h>", "void log_msg(const char *user) {", "    char line[128];", "    snprintf(line, sizeof line, \"user: %s\", user);", "    printf(line);", "}"], 5, [], "The formatted line, which contains user data, is used as a format string."),
 (["#include <stdlib.h>", "void release(char *p, int err) {", "    free(p);", "    if (err) {", "        free(p);", "    }", "}"], 5, [], "On the error path p is freed a second time."),
 (["#include <stdlib.h>", "struct node { int v; struct node *next; };", "int pop(struct node **head) {", "    struct node *n = *head;", "    free(n);", "    *head = n->next;", "    return 0;", "}"], 6, [], "n->next is read after n was freed."),
 (["#include <stdlib.h>", "int *make_grid(int rows, int cols) {", "    if (rows <= 0 || cols <= 0) return NULL;", "    int *g = malloc(rows * cols * sizeof(int));", "    if (!g) return NULL;", "    for (int r = 0; r < rows; r++)", "        for (int c = 0; c < cols; c++)", "            g[(size_t)r * cols + c] = 0;", "    return g;", "}"], 4, [], "rows * cols overflows int for large inputs, so the allocation can be far smaller than the loops then write."),
 (["#include <string.h>", "void set_id(char id[8], const char *s) {", "    strncpy(id, s, 8);", "    id[8] = '\\0';", "}"], 4, [], "id has 8 elements: index 8 is one past the end."),
 (["#include <string.h>", "int check(const char *pw) {", "    char buf[32];", "    size_t n = strlen(pw);", "    if (n > sizeof buf) return -1;", "    memcpy(buf, pw, n);", "    buf[n] = '\\0';", "    return strcmp(buf, \"secret\") == 0;", "}"], 5, [7], "n == 32 passes the check and buf[32] is written: the test must be n >= sizeof buf."),
 (["#include <stddef.h>", "int get(const int *arr, size_t len, int idx) {", "    if (idx >= (int)len) return -1;", "    return arr[idx];", "}"], 3, [4], "A negative idx passes the check and reads before the array."),
 (["#include <stdlib.h>", "#include <string.h>", "char *join(const char *a, const char *b) {", "    size_t la = strlen(a), lb = strlen(b);", "    char *r = malloc(la + lb);", "    if (!r) return NULL;", "    memcpy(r, a, la);", "    memcpy(r + la, b, lb + 1);", "    return r;", "}"], 5, [], "The terminator copied on line 8 needs la + lb + 1 bytes."),
 (["#include <stdio.h>", "int read_line(char *out, int size) {", "    if (size <= 0) return -1;", "    if (!fgets(out, size, stdin)) return -1;", "    return 0;", "}"], 0, [], "Safe: fgets writes at most size bytes including the terminator."),
 (["#include <string.h>", "void parse(const unsigned char *pkt, unsigned char out[64]) {", "    unsigned len = pkt[0];", "    memcpy(out, pkt + 1, len);", "}"], 4, [3], "len comes from the packet (up to 255) and is not checked against the 64-byte output."),
 (["#include <stddef.h>", "size_t count_char(const char *s, char c) {", "    size_t n = 0;", "    for (; *s; s++)", "        if (*s == c) n++;", "    return n;", "}"], 0, [], "Safe: it only reads the string up to its terminator."),
 (["#include <unistd.h>", "#include <fcntl.h>", "int open_log(const char *path) {", "    if (access(path, W_OK) != 0) return -1;", "    return open(path, O_WRONLY | O_APPEND);", "}"], 4, [5], "A check-then-use race: the file can be replaced between access() and open()."),
 (["#include <string.h>", "void upper(char *s) {", "    char tmp[64];", "    size_t n = strlen(s);", "    for (size_t i = 0; i < n; i++)", "        tmp[i] = (char)(s[i] & ~0x20);", "    memcpy(s, tmp, n);", "}"], 6, [5], "Strings of 64 or more characters overflow tmp: nothing bounds n."),
 (["#include <stdint.h>", "#include <string.h>", "void put16(uint8_t *buf, size_t cap, size_t off, uint16_t v) {", "    if (cap < 2 || off > cap - 2) return;", "    memcpy(buf + off, &v, 2);", "}"], 0, [], "Safe: the bound is written so that it cannot wrap, and both bytes fit whenever the write happens."),
]

out = []
cats = []
for i in range(25):
    cats += [("science", science[i]), ("multidomain", multi[i]), ("math", math_q[i])]
for s in sec: cats.append(("security", s))
for k, (cat, item) in enumerate(cats, 1):
    e = {"id": f"q{k}", "category": cat}
    if cat in ("science", "multidomain"):
        e.update(format="letter", question=item["question"], choices=item["choices"], answer=item["answer"], rationale=item["rationale"])
    elif cat == "math":
        q, a, why = item
        e.update(format="integer", question=q, answer=str(a), rationale=why)
    else:
        lines, a, acc, why = item
        e.update(format="line", question="Which line of this C function introduces a memory-safety or security flaw? Answer with the single best line number, or 0 if the function is safe.", code=lines, answer=str(a), rationale=why)
        if acc: e["accept"] = [str(x) for x in acc]
    out.append(e)
assert len(out) == 92
json.dump({"version": 1, "note": "Written for QuarkStar's q36-eval: a capability regression set, not a benchmark score.", "questions": out}, open('ts/eval/questions.json', 'w'), indent=1, ensure_ascii=False)
print(f'wrote {len(out)} questions to ts/eval/questions.json')
