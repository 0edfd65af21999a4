"""What real models cost: the price table and a sample's cost (`pricing`), the budget a run or sweep may spend (`budget`), and the estimate before a run (`estimate`)."""
