// Quant core exports (issue: quant core). See quant/*.ts for the kernels.
export { blockElems, blockBytes } from './quant/types';
export { dequantBlock } from './quant/dequant';
export { dot, dotScalarPath, gridBlobPtr, gridBlobBytes } from './quant/dot';
export { dequantRow, matvec, matvecScalar, matmul, quantizeRow } from './quant/rows';
export { f32ToF16 } from './f16';
