#!/bin/bash
# The tracked files speak to the project's users, who have a GPU server and a
# PostgreSQL they installed: none names a path outside the repository
# (../shared), the folder of packages this project's developers take to their
# test machines (.device/), those machines ("lent", their kind names) or what
# goes to them ("one carry", "carrying .device"). "carry" alone stays: a thread
# carries rows, a model carries names.
cd "$(dirname "$0")/.."
pattern='\.\./shared|\.device/|\blent\b|\b(a|one|the) carry\b|\bcarrying \.device|nvidia-h(100|200)'
hits=$(git grep -n -I -E "$pattern" -- . ':!test/words_check.sh')
if [ -n "$hits" ]; then
  echo "$hits"
  echo "words-check: FAIL (tracked files that speak of this project's own environment, not the user's)"
  exit 1
fi
echo "words-check: PASS ($(git ls-files | wc -l) tracked files)"
