#!/bin/bash
# Fills .bench/ (git-ignored) with what bench/run.sh needs, for a GPU server
# that has neither the data sets nor Debian's XGBoost: run it on a Debian 12
# machine with libxgboost0, then copy .bench/ beside the checkout there.
#     bench/fetch_inputs.sh DATASETS
# DATASETS is a directory with cal_housing/cal_housing.data.gz (StatLib's California
# housing), adult/adult.data.gz and adult.test.gz (UCI's Adult) and fashion_mnist/
# with the four idx files of Zalando's Fashion-MNIST, gzipped as published.
# Fashion-MNIST's images are recompressed with xz to keep .bench/ small (about 30 MB).
set -euo pipefail
src=$(cd "${1:?usage: bench/fetch_inputs.sh DATASETS (see the header)}" && pwd)
cd "$(dirname "$0")/.."

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
