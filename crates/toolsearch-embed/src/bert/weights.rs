//! Reading a BERT checkpoint's tensors from safetensors (f32 or bf16) into the shapes the
//! encoder wants: linear layers transposed and packed once for the CPU's kernel.

use std::collections::HashMap;

use safetensors::{Dtype, SafeTensors};

use super::{Linear, Norm};
use crate::LoadError;
use crate::matmul::Packed;

/// Reads tensors by name, trying the `bert.` prefix some checkpoints use.
pub(super) struct Weights<'a> {
    tensors: SafeTensors<'a>,
    names: HashMap<String, String>,
}

impl<'a> Weights<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Result<Self, LoadError> {
        let tensors = SafeTensors::deserialize(bytes)
            .map_err(|e| LoadError::new(format!("not a safetensors file: {e}")))?;
        let names = tensors
            .names()
            .into_iter()
            .map(|n| {
                (
                    n.strip_prefix("bert.").unwrap_or(n).to_owned(),
                    n.to_owned(),
                )
            })
            .collect();
        Ok(Self { tensors, names })
    }

    /// The tensor `name` (or its old `gamma`/`beta` spelling) as f32, checked against `shape`.
    /// The first dimension of tensor `name`, when it is there.
    pub(super) fn rows_of(&self, name: &str) -> Option<usize> {
        let full = self.names.get(name)?;
        let t = self.tensors.tensor(full).ok()?;
        t.shape().first().copied()
    }

    pub(super) fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, LoadError> {
        let old = name
            .replace("LayerNorm.weight", "LayerNorm.gamma")
            .replace("LayerNorm.bias", "LayerNorm.beta");
        let full = self
            .names
            .get(name)
            .or_else(|| self.names.get(&old))
            .ok_or_else(|| LoadError::new(format!("no tensor {name}")))?;
        let view = self
            .tensors
            .tensor(full)
            .map_err(|e| LoadError::new(format!("{full}: {e}")))?;
        if view.shape() != shape {
            return Err(LoadError::new(format!(
                "{full}: shape {:?}, expected {shape:?}",
                view.shape()
            )));
        }
        let data = view.data();
        let values = match view.dtype() {
            Dtype::F32 => data
                .as_chunks::<4>()
                .0
                .iter()
                .map(|b| f32::from_le_bytes(*b))
                .collect(),
            Dtype::BF16 => data
                .as_chunks::<2>()
                .0
                .iter()
                .map(|b| f32::from_bits(u32::from(u16::from_le_bytes(*b)) << 16))
                .collect(),
            other => {
                return Err(LoadError::new(format!(
                    "{full}: {other:?} weights are not supported (f32 or bf16)"
                )));
            }
        };
        Ok(values)
    }

    pub(super) fn norm(&self, prefix: &str, n: usize) -> Result<Norm, LoadError> {
        Ok(Norm {
            weight: self.get(&format!("{prefix}.LayerNorm.weight"), &[n])?,
            bias: self.get(&format!("{prefix}.LayerNorm.bias"), &[n])?,
        })
    }

    /// Linear layers `names` (PyTorch `[out × in]` each) stacked along their outputs and
    /// transposed to `[in × Σout]`.
    pub(super) fn linear(
        &self,
        names: &[&str],
        inputs: usize,
        outputs: usize,
    ) -> Result<Linear, LoadError> {
        let total = outputs * names.len();
        let mut weight = vec![0.0; inputs * total];
        let mut bias = Vec::with_capacity(total);
        for (part, name) in names.iter().enumerate() {
            let w = self.get(&format!("{name}.weight"), &[outputs, inputs])?;
            for (o, row) in w.chunks_exact(inputs).enumerate() {
                for (i, &v) in row.iter().enumerate() {
                    weight[i * total + part * outputs + o] = v;
                }
            }
            bias.extend(self.get(&format!("{name}.bias"), &[outputs])?);
        }
        Ok(Linear {
            weight: Packed::new(weight, inputs, total),
            bias,
        })
    }
}
