#!/bin/bash
# Run on a machine with the data sets and Debian's XGBoost (this project's
# dev machine), in the project root: fills .bench/ (git-ignored) with what
# bench/run.sh needs on the GPU machine, which has neither. Fashion-MNIST is
# recompressed with xz so that .bench/ and .device/ fit one carry (64 MiB).
set -euo pipefail
cd "$(dirname "$0")/.."
src=${DATASETS:-../shared/datasets}
mkdir -p .bench/data .bench/lib
cp "$src"/cal_housing/cal_housing.data.gz "$src"/adult/adult.data.gz "$src"/adult/adult.test.gz .bench/data/
cp "$src"/fashion_mnist/*labels-idx1-ubyte.gz .bench/data/
for f in train-images-idx3-ubyte t10k-images-idx3-ubyte; do
  [ -s .bench/data/$f.xz ] || gzip -dc "$src/fashion_mnist/$f.gz" | xz -9 -T0 > .bench/data/$f.xz
done
# Debian's XGBoost C library (package libxgboost0, with libdmlc0)
for lib in libxgboost.so.0 libdmlc.so.0; do
  xz -9 -c "$(readlink -f /usr/lib/x86_64-linux-gnu/$lib)" > .bench/lib/$lib.xz
done
dpkg-query -W -f='${Package} ${Version}\n' libxgboost0 libdmlc0 > .bench/lib/VERSIONS
du -sh .bench
