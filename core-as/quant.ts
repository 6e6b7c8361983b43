// quant kernels: see issue 3
