"""Stand-in of upstream's `nemo_rl/environments/math_environment.py` HFVerifyWorker (v0.7.0): an
unknown math_verify_impl raises ValueError inside verify's per-answer try, which scores it 0.0."""


class HFVerifyWorker:
    def verify(self, pred_responses, ground_truths, return_extracted_answer=False, **kwargs):
        results = []
        for pred, gold in zip(pred_responses, ground_truths, strict=False):
            try:
                impl = kwargs.get("math_verify_impl", "hf_math_verify")
                if impl not in ("hf_math_verify", "dapo_math_verify"):
                    raise ValueError(f"Unknown math_verify_impl: {impl}.")
                results.append(1.0 if "{" + gold + "}" in pred else 0.0)
            except Exception:
                results.append(0.0)
        return results
